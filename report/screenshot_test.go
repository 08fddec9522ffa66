package report

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// readmeShots are the screenshots README.md and the docs show, each a page
// of the CI capture's report at 800 px wide: the page's fragment and a
// script run after the report's own (what a user clicked).
var readmeShots = []struct {
	file, frag, script string
}{
	{"html-report.png", "#check=BASE-2", `document.querySelectorAll("details.finding").forEach(function(d){d.open=true});
`},
	{"conversation.png", "#tab=timeline", `document.querySelectorAll("details.row > summary").forEach(function (s) { if (s.textContent.indexOf("git push") >= 0) s.click(); });
document.querySelectorAll("main > section:not(#views)").forEach(function (s) { s.hidden = true; });`},
}

// TestREADMEScreenshots takes the README's screenshots of the HTML report
// in headless Chromium; with -update it writes them to docs/img (go test
// ./report -run TestREADMEScreenshots -update). Without -update it checks
// that each is a PNG of the page at 800 px and that the docs show it.
func TestREADMEScreenshots(t *testing.T) {
	bin := chromium(t)
	var buf bytes.Buffer
	h := NewHTML(&buf)
	h.Now = func() time.Time { return time.Date(2026, 8, 24, 9, 0, 0, 0, time.UTC) }
	r, err := NewRun(RunConfig{Header: header(), Writers: []Writer{h}})
	if err != nil {
		t.Fatal(err)
	}
	replayFile(t, r, ciCapture)
	if _, err := r.Close(); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range readmeShots {
		if !bytes.Contains(readme, []byte("docs/img/"+s.file)) {
			t.Errorf("README.md does not show docs/img/%s", s.file)
		}
		out := filepath.Join(t.TempDir(), s.file)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--disable-background-networking",
			"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir="+t.TempDir(), "--window-size=800,1000",
			"--virtual-time-budget=3000", "--screenshot="+out, withScript(t, buf.Bytes(), s.script)+s.frag)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		err := cmd.Run()
		cancel()
		if err != nil {
			t.Skipf("chromium cannot take screenshots here: %v\n%s", err, errb.String())
		}
		f, err := os.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := png.DecodeConfig(f)
		f.Close()
		if err != nil || cfg.Width != 800 || cfg.Height != 1000 {
			t.Fatalf("%s: %v, %dx%d, want an 800x1000 PNG", s.file, err, cfg.Width, cfg.Height)
		}
		if *update {
			data, _ := os.ReadFile(out)
			if err := os.WriteFile(filepath.Join("..", "docs", "img", s.file), data, 0o644); err != nil {
				t.Fatal(err)
			}
		} else if _, err := os.Stat(filepath.Join("..", "docs", "img", s.file)); err != nil {
			t.Errorf("docs/img/%s: %v (go test ./report -run TestREADMEScreenshots -update takes it)", s.file, err)
		}
	}
}
