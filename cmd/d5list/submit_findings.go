package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// findingWidth is the width `submit --wait` wraps a finding to.
const findingWidth = 80

// printFindings prints a verdict's findings as the entry page lists them:
// the portal's own words and figures (the API's findings, made by the
// function that makes the page's), each its code and plain words, where
// it is, its claimed and measured values, and how the portal judged it,
// wrapped to findingWidth. A portal too old to give findings has its
// reasons printed as they are.
func printFindings(w io.Writer, sub *followedSubmission) {
	if len(sub.Findings) == 0 {
		for _, r := range sub.Reasons {
			fmt.Fprintln(w, "  "+formatReason(r))
		}
		return
	}
	for _, f := range sub.Findings {
		head := f.Code + ": " + f.Text
		if f.Where != "" {
			head += " (" + f.Where + ")"
		}
		writeWrapped(w, "  ", "      ", head)
		if f.Values != "" {
			writeWrapped(w, "    ", "      ", f.Values)
		}
		if f.Working != "" {
			writeWrapped(w, "    ", "      ", "How the portal judged it: "+f.Working)
		}
	}
}

// writeWrapped writes text in lines of at most findingWidth characters
// where its words allow, the first indented by first and the rest by
// rest; a word longer than a line (a path) stands alone on its line.
func writeWrapped(w io.Writer, first, rest, text string) {
	line, indent := "", first
	flush := func() {
		fmt.Fprintln(w, indent+line)
		line, indent = "", rest
	}
	for _, word := range strings.Fields(text) {
		if line != "" && utf8.RuneCountInString(indent+line+" "+word) > findingWidth {
			flush()
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	if line != "" {
		flush()
	}
}
