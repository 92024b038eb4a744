"""Tests of analysis/base/: the atomic writer, write errors, text encodings, names, processes; the faults
every command must survive (a full disk, two writers on one output, Ctrl-C and SIGTERM).
"""
