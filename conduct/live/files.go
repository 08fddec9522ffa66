package live

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
)

// ReadTapped reads the hooks `wrap --conduct` tapped (nil: no list).
func ReadTapped(path string) ([]string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	defer f.Close()
	var hooks []string
	if err := json.NewDecoder(io.LimitReader(f, 1<<20)).Decode(&hooks); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return hooks, nil
}

// WriteTapped writes the list of hooks tapped with --conduct, for the
// conduct server (mode 0600, never through a link).
func WriteTapped(path string, hooks []string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	data, _ := json.Marshal(hooks)
	_, err = f.Write(append(data, '\n'))
	return errors.Join(err, f.Close())
}

// Restarted reports whether a conduct server of this directory started
// within the last ten minutes (a server that idled out and was started
// again, mid-session: its timeline may have missed the start).
func Restarted(marker string) bool {
	st, err := os.Stat(marker)
	return err == nil && time.Since(st.ModTime()) < 10*time.Minute
}

// markStarted marks a server's start, once its pid file is written: a
// marker with no pid file beside it means the last server has ended.
func markStarted(marker string) {
	if f, err := os.OpenFile(marker, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600); err == nil {
		f.Close()
	}
	now := time.Now()
	_ = os.Chtimes(marker, now, now)
}
