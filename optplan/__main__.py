from optplan.cli import entry

entry()
