package replay

import (
	"context"

	"github.com/ahp-tap/ahp-tap/report"
)

// CheckAll checks every input in turn, each one a report source, telling
// the replayer's report run where each begins and ends. Issue 8 item 5:
// when ctx ends (SIGINT/SIGTERM) it stops with what the inputs read so
// far gave (the input being read when it ended included); a read that
// blocks is abandoned.
func (ic *Checker) CheckAll(ctx context.Context, names []string) []report.Source {
	var sources []report.Source
	run := ic.Replayer().Run
	for _, name := range names {
		run.StartInput(name)
		src, ok := CheckInterruptibly(ctx, func() report.Source { return ic.Check(name) })
		run.EndInput(InputEnd(src))
		if !ok {
			break
		}
		sources = append(sources, src)
		if ctx.Err() != nil {
			break
		}
	}
	return sources
}

// InputEnd is what the streaming reports learn of an input once checked:
// its size and digest (its name and frames they counted themselves).
func InputEnd(src report.Source) report.InputEnd {
	if src.Input == nil {
		return report.InputEnd{}
	}
	return report.InputEnd{Bytes: src.Input.Bytes, SHA256: src.Input.SHA256}
}
