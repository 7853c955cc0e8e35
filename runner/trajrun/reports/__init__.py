"""Reports of a run: ``console`` (the terminal), ``junit`` (JUnit XML)
and ``json`` (machine-readable).

Import the module you need; nothing is re-exported here so that importing one report stays cheap.
"""
