package replay

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// A Progress shows a replay's progress on stderr: bytes read of the
// total, frames and frames per second, and the time left. It is off (every
// method does nothing) when stderr is not a terminal or with --quiet.
type Progress struct {
	bar    *progressbar.ProgressBar // nil: off
	start  time.Time
	frames uint64
	next   time.Time // when the description is next refreshed
}

// NewProgress returns a progress bar over total bytes (-1: unknown) on w,
// or an inactive one when on is false.
func NewProgress(w io.Writer, total int64, on bool) *Progress {
	p := &Progress{start: time.Now()}
	if !on {
		return p
	}
	p.bar = progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionShowDescriptionAtLineEnd(),
		progressbar.OptionSetDescription("replay"),
		// No spinner goroutine for an unknown total: the bar renders
		// only when bytes arrive.
		progressbar.OptionSetSpinnerChangeInterval(0),
		progressbar.OptionClearOnFinish(),
	)
	return p
}

// Reader wraps r so that every byte read moves the bar.
func (p *Progress) Reader(r io.Reader) io.Reader {
	if p.bar == nil {
		return r
	}
	return &progressReader{r: r, p: p}
}

type progressReader struct {
	r io.Reader
	p *Progress
}

func (pr *progressReader) Read(b []byte) (int, error) {
	n, err := pr.r.Read(b)
	pr.p.bar.Add(n)
	return n, err
}

// frame counts a frame; the frame rate is shown at most every half second.
func (p *Progress) frame() {
	if p == nil || p.bar == nil {
		return
	}
	p.frames++
	if p.frames&1023 != 0 {
		return
	}
	if now := time.Now(); now.After(p.next) {
		p.next = now.Add(500 * time.Millisecond)
		rate := float64(p.frames) / now.Sub(p.start).Seconds()
		p.bar.Describe(fmt.Sprintf("%d frames, %.0f frames/s", p.frames, rate))
	}
}

// Done removes the bar.
func (p *Progress) Done() {
	if p != nil && p.bar != nil {
		p.bar.Finish()
		p.bar = nil
	}
}
