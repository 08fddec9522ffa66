// Command httpbackend is the minimal AHP backend the HTTP benchmark
// (bench/http.sh) puts behind each proxy: it answers every POST with a
// no-effect hooks/intercept result carrying the request's id.
package main

import (
	"bytes"
	"flag"
	"io"
	"log"
	"net/http"
)

func main() {
	addr := flag.String("listen", "127.0.0.1:9801", "address to listen on")
	flag.Parse()
	key := []byte(`"id":"`)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		id := []byte("unknown")
		if i := bytes.Index(body, key); i >= 0 {
			rest := body[i+len(key):]
			if j := bytes.IndexByte(rest, '"'); j >= 0 {
				id = rest[:j]
			}
		}
		out := make([]byte, 0, 128)
		out = append(out, `{"jsonrpc":"2.0","id":"`...)
		out = append(out, id...)
		out = append(out, `","result":{"protocolVersion":"draft","effects":[]}}`...)
		w.Header().Set("Content-Type", "application/json")
		w.Write(out)
	})
	log.Fatal(http.ListenAndServe(*addr, h))
}
