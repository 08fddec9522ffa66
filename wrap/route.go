package wrap

import (
	"fmt"
	"strings"
)

// A Route is one link of an `ahp-tap http` that fronts several upstreams:
// the harness posts to Listen, the tap forwards to Upstream, and the link
// is the registration's hook Hook, with its own violation log and capture
// (issue 23: one process sees every HTTP backend of a registration). Wrap
// gives each wrapped HTTP entry its route; HTTPCommand puts them all on
// one command line, `--route` once per entry.
type Route struct {
	Hook     string
	Listen   string
	Upstream string
	Log      string
	Capture  string
}

// routeKeys are the members of a --route value, in the order String
// writes them.
var routeKeys = []string{"hook", "listen", "upstream", "log", "capture"}

func (r *Route) field(key string) *string {
	switch key {
	case "hook":
		return &r.Hook
	case "listen":
		return &r.Listen
	case "upstream":
		return &r.Upstream
	case "log":
		return &r.Log
	case "capture":
		return &r.Capture
	}
	return nil
}

// String is the route as --route takes it:
// `hook=ID,listen=ADDR,upstream=URL,log=PATH,capture=PATH`, empty members
// left out.
func (r Route) String() string {
	var parts []string
	for _, k := range routeKeys {
		if v := *r.field(k); v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	return strings.Join(parts, ",")
}

// ParseRoute reads a --route value: comma-separated KEY=VALUE members,
// KEY one of hook, listen, upstream, log and capture. A comma followed by
// anything but one of those keys and "=" belongs to the value before it,
// so a URL or a path may hold commas. listen and upstream are required;
// a member given twice, or an unknown one first, is an error. Errors never
// quote the value: an upstream may carry credentials.
func ParseRoute(s string) (Route, error) {
	var r Route
	seen := map[string]bool{}
	var cur *string
	for i, part := range strings.Split(s, ",") {
		key, val, ok := strings.Cut(part, "=")
		if f := r.field(key); ok && f != nil {
			if seen[key] {
				return Route{}, fmt.Errorf("a route gives %s twice", key)
			}
			seen[key], cur, *f = true, f, val
			continue
		}
		if i == 0 {
			return Route{}, fmt.Errorf("a route starts with one of %s followed by =, not %q", strings.Join(routeKeys, ", "), key)
		}
		*cur += "," + part
	}
	switch {
	case r.Listen == "":
		return Route{}, fmt.Errorf("a route has no listen=ADDR")
	case r.Upstream == "":
		return Route{}, fmt.Errorf("the route on %s has no upstream=URL", r.Listen)
	}
	return r, nil
}

// HTTPCommand is the one `ahp-tap http` command line that starts the taps
// of every HTTP entry Wrap wrapped (nil when there is none). With one
// entry it is that entry's Command; with several, one process fronts them
// all, one --route (and listener) per entry, so that one process sees
// every HTTP backend of the registration (and, with Conduct, feeds one
// link per hook to the conduct timeline).
func HTTPCommand(o Options, changes []Change) []string {
	var routes []Route
	var single []string
	for _, c := range changes {
		if c.Action == "wrapped" && c.Command != nil {
			routes = append(routes, c.Route)
			single = c.Command
		}
	}
	switch len(routes) {
	case 0:
		return nil
	case 1:
		return single
	}
	cmd := []string{o.Tap, "http", "--registration", o.Registration}
	if o.Conduct != "" {
		cmd = append(cmd, "--conduct", o.Conduct)
	}
	for _, r := range routes {
		cmd = append(cmd, "--route", r.String())
	}
	return cmd
}
