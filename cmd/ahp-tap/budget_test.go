package main

import "testing"

func TestParseBudget(t *testing.T) {
	for in, want := range map[string]int64{"64MiB": 64 << 20, "1M": 1 << 20, "2GiB": 2 << 30, "1048576": 1 << 20, "64GiB": 64 << 30} {
		if got, err := parseBudget(in); err != nil || got != want {
			t.Errorf("parseBudget(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-5MiB", "1023KiB", "65GiB", "lots", "9223372036854775807G"} {
		if _, err := parseBudget(in); err == nil {
			t.Errorf("parseBudget(%q) = nil error, want a usage error", in)
		}
	}
}
