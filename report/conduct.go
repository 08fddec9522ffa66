package report

import (
	"fmt"
	"html"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ahp-tap/ahp-tap/conduct"
	"github.com/ahp-tap/ahp-tap/internal/printable"
)

// maxTextChains is how many chains a text report shows in full when no
// conduct finding narrows them down.
const maxTextChains = 20

// ChainText is one line for people about a chain: each delivery with its
// time from the first, what the backend answered and how long it took,
// and where the chain stopped.
//
// The line starts with a fixed word, and every text from the wire (event
// type and id, hook ids, outcomes) has its control and format characters
// escaped, so that no event can act on a terminal or start a CI workflow
// command (issue 28 item 2).
func ChainText(c conduct.Chain) string {
	var b strings.Builder
	fmt.Fprintf(&b, "event %s %s:", safeText(c.EventType), safeText(c.EventID))
	var t0 time.Time
	for i, s := range c.Steps {
		if i == 0 {
			t0 = s.Sent
		}
		sep := " "
		if i > 0 {
			sep = "; "
		}
		fmt.Fprintf(&b, "%s+%s %s ", sep, fmtOffset(s.Sent.Sub(t0)), safeText(s.Hook))
		if s.Method == "hooks/observe" {
			b.WriteString("observe")
			continue
		}
		out := s.Outcome
		if out == "" {
			out = "unanswered"
		}
		fmt.Fprintf(&b, "intercept → %s", safeText(out))
		if s.LatencyMs > 0 {
			fmt.Fprintf(&b, " in %s", fmtOffset(time.Duration(s.LatencyMs*float64(time.Millisecond))))
		}
		if s.Policy != "" {
			fmt.Fprintf(&b, " (%s)", safeText(s.Policy))
		}
	}
	if c.Ended != "" {
		fmt.Fprintf(&b, " — stopped: %s", safeText(c.Ended))
	}
	if len(c.Findings) > 0 {
		fmt.Fprintf(&b, " [%s]", strings.Join(c.Findings, " "))
	}
	return b.String()
}

// safeText escapes what could act on a terminal or a log viewer: control
// characters (a newline too), format characters such as bidirectional
// overrides, and bytes that are not UTF-8.
func safeText(s string) string {
	if utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsGraphic(r) && r != ' ' }) < 0 {
		return s
	}
	q := strconv.QuoteToGraphic(s)
	return q[1 : len(q)-1]
}

func fmtOffset(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(100 * time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// writeChainsText writes the chain view of a text report: every chain
// when there are few, else the chains with a conduct finding.
func writeChainsText(w io.StringWriter, sources []Source) {
	var all []conduct.Chain
	for _, src := range sources {
		all = append(all, src.Chains...)
	}
	if len(all) == 0 {
		return
	}
	show := all
	if len(all) > maxTextChains {
		show = nil
		for _, c := range all {
			if len(c.Findings) > 0 {
				show = append(show, c)
			}
		}
	}
	w.WriteString(fmt.Sprintf("conduct: %d chains judged", len(all)))
	if len(show) < len(all) {
		w.WriteString(fmt.Sprintf(", the %d with a conduct finding shown (every one in --format json and the HTML report)", len(show)))
	}
	w.WriteString("\n")
	for _, c := range show {
		w.WriteString("  ")
		w.WriteString(ChainText(c))
		w.WriteString("\n")
	}
}

// writeChainsHTML writes the conduct section of the HTML report: one row
// per judged event, one line per delivery (server-rendered: at most 256
// chains).
func writeChainsHTML(bw io.StringWriter, chains []conduct.Chain) {
	if len(chains) == 0 {
		return
	}
	esc := html.EscapeString
	bw.WriteString(fmt.Sprintf("<section id=\"conduct\"><h2>Conduct: each event's chain across the backends</h2>\n<p class=\"meta\">%d most recent events judged across the registration's links: which backend got each when, what it answered, where the chain stopped and why.</p>\n", len(chains)))
	bw.WriteString("<table class=\"chains\"><thead><tr><th>event</th><th>deliveries</th><th>stopped</th><th>findings</th></tr></thead><tbody>\n")
	for _, c := range chains {
		class := "pass"
		if len(c.Findings) > 0 {
			class = "fail"
		}
		bw.WriteString(fmt.Sprintf("<tr class=\"%s\"><td>%s<br><span class=\"mono\">%s</span></td><td><ol>", class, esc(c.EventType), esc(c.EventID)))
		var t0 time.Time
		for i, s := range c.Steps {
			if i == 0 {
				t0 = s.Sent
			}
			what := "hooks/observe"
			if s.Method != "hooks/observe" {
				out := s.Outcome
				if out == "" {
					out = "unanswered"
				}
				what = "hooks/intercept → " + out
				if s.LatencyMs > 0 {
					what += " in " + fmtOffset(time.Duration(s.LatencyMs*float64(time.Millisecond)))
				}
				if s.Policy != "" {
					what += " (" + s.Policy + ")"
				}
			}
			bw.WriteString(fmt.Sprintf("<li><span class=\"mono\">+%s</span> %s: %s</li>", esc(fmtOffset(s.Sent.Sub(t0))), esc(s.Hook), esc(what)))
		}
		bw.WriteString(fmt.Sprintf("</ol></td><td>%s</td><td>", esc(c.Ended)))
		for _, f := range c.Findings {
			check, _, _ := strings.Cut(f, "/")
			bw.WriteString(fmt.Sprintf("<a href=\"#check=%s\">%s</a> ", esc(check), esc(f)))
		}
		bw.WriteString("</td></tr>\n")
	}
	bw.WriteString("</tbody></table></section>\n")
}

// A ConductScenario is what one --inject-plan scenario's faults did across
// a registration's links, as replay --conduct judged them.
type ConductScenario struct {
	Name string
	// Injected is how many faults of the scenario the captures note, and
	// Events the events (ids) they hit, in order (at most 16 kept).
	Injected int
	Events   []string
	// Harness is what the harness did with the first event hit: its
	// chain (ChainText), "" when no chain of it was judged.
	Harness string
	// Verdict lists the conduct rules reported about the events hit
	// (none: pass).
	Verdict []string
}

// writeScenariosText writes one line per scenario: scenario → fault
// injected → what the harness did → verdict.
func writeScenariosText(w io.StringWriter, sources []Source) {
	for _, src := range sources {
		for _, sc := range src.Scenarios {
			verdict := "pass"
			if len(sc.Verdict) > 0 {
				verdict = strings.Join(sc.Verdict, ", ")
			}
			harness := "no chain of it was judged"
			if sc.Harness != "" {
				harness = sc.Harness
			}
			w.WriteString(printable.Line(fmt.Sprintf("scenario %s: fault injected %d %s (events %s) → the harness: %s → verdict: %s",
				sc.Name, sc.Injected, plural(sc.Injected, "time", "times"), strings.Join(sc.Events, ", "), harness, verdict)))
			w.WriteString("\n")
		}
	}
}
