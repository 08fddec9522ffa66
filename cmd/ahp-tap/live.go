package main

// The output flags both live taps (stdio, http) share.

// consoleHelp is the help of --console.
const consoleHelp = "print findings as readable lines on stderr (\"ahp-tap ▸ …\"; colour on a terminal unless NO_COLOR is set)"

// summaryHelp is the help of --summary.
const summaryHelp = "print a summary on stderr at exit (default: when stderr is a terminal)"
