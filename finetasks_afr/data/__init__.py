"""Where datasets come from: the hub sources of the suite and their local mirrors, the raw-release importers, the one
writer of local dataset folders, and the analysis input bundled with the package (the demo's sweep, configs).
"""
