// Command backend is the small AHP backend make.sh records a HAR in front
// of. It answers deterministically, with a few deliberate faults so that a
// replay has findings to compare: evt_4 gets a wrong protocolVersion
// (BASE-2), evt_5 a text/plain answer (HTTP-1), evt_6 a deny whose reason
// holds the caller's bearer credential (AUTH-1). /health and /login are
// not AHP.
package main

import (
	"encoding/json"
	"flag"
	"io"
	"log"
	"net/http"
	"strings"
)

func main() {
	addr := flag.String("listen", "127.0.0.1:9811", "address to listen on")
	flag.Parse()
	http.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	http.HandleFunc("/login", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html><body>welcome</body></html>\n")
	})
	http.HandleFunc("/agent-hooks", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Event struct {
					ID   string `json:"id"`
					Tool struct {
						Input map[string]any `json:"input"`
					} `json:"tool"`
				} `json:"event"`
			} `json:"params"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, "bad JSON", http.StatusBadRequest)
			return
		}
		if req.ID == nil {
			w.WriteHeader(http.StatusAccepted) // a notification: 202, no body
			return
		}
		version, effects := "draft", []any{}
		ctype := "application/json"
		command, _ := req.Params.Event.Tool.Input["command"].(string)
		switch req.Params.Event.ID {
		case "evt_3":
			effects = append(effects, map[string]any{"type": "deny", "reason": "force push: " + command})
		case "evt_4":
			version = "1900-01-01"
		case "evt_5":
			ctype = "text/plain"
		case "evt_6":
			cred := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			effects = append(effects, map[string]any{"type": "deny", "reason": "token " + cred + " is not allowed"})
		}
		result := map[string]any{"protocolVersion": version, "effects": effects}
		if req.Method == "hooks/capabilities" {
			result = map[string]any{"protocolVersion": version, "manifest": map[string]any{
				"events":         []any{map[string]any{"event": "tool.before", "modes": []string{"intercept"}, "capabilities": map[string]any{"effects": []string{"deny"}}}},
				"transports":     []string{"http"},
				"authentication": []string{"bearer"},
			}}
		}
		out, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
		w.Header().Set("Content-Type", ctype)
		w.Write(out)
	})
	log.Fatal(http.ListenAndServe(*addr, nil))
}
