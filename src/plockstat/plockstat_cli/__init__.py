"""plockstat's command line, one module per concept: common (codes, configuration), elf,
datafile (reading libplockstat's files), symbols, analyze (data to rows), text (the report),
output (text, JSON, folded), run (a command to its end), attach (-p), cli (options)."""
