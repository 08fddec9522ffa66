// Command httprp is the reference the HTTP benchmark (bench/http.sh) sets
// beside ahp-tap: the Go standard library's reverse proxy
// (httputil.ReverseProxy) with no audit at all, so the table shows what
// net/http itself costs on the machine apart from ahp-tap's own work.
package main

import (
	"flag"
	"io"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
)

func main() {
	addr := flag.String("listen", "127.0.0.1:9805", "address to listen on")
	upstream := flag.String("upstream", "http://127.0.0.1:9801", "backend URL")
	flag.Parse()
	u, err := url.Parse(*upstream)
	if err != nil {
		log.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 256, DisableCompression: true}
	rp.ErrorLog = log.New(io.Discard, "", 0) // wrk drops requests in flight when it stops
	log.Fatal(http.ListenAndServe(*addr, rp))
}
