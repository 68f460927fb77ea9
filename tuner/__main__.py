from tuner.cli import entry

entry()
