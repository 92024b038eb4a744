"""What every stage shares: the one atomic writer, write errors tied to their file, user text encodings, the rule
for user-given names, and worker processes that die with their parent. Imports nothing else of the project.
"""
