# bench/lib.sh: pieces the HTTP benchmark scripts share (sourced by
# bench/http.sh, bench/budget.sh, bench/pacedcpu.sh and bench/conns.sh).

# bench_work NAME: make the run's scratch directory, $WORK, and on exit
# stop the processes listed in PIDS and remove it.
bench_work() {
	WORK=$(mktemp -d "/tmp/ahp-tap-bench-$1.XXXXXX")
	PIDS=()
	trap bench_cleanup EXIT
}

bench_cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$WORK"
}

# wait_port PORT: wait until something listens on 127.0.0.1:PORT.
wait_port() {
	for _ in $(seq 100); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
		sleep 0.1
	done
	echo "nothing listens on port $1" >&2
	return 1
}

# nginx_conf DIR BACKEND_PORT NGINX_PORT: an nginx configuration (one
# worker, upstream keep-alive, no buffering) reverse-proxying
# 127.0.0.1:NGINX_PORT to the backend, its files in DIR.
nginx_conf() {
	cat <<NGINX
worker_processes 1;
daemon off;
pid $1/nginx.pid;
error_log $1/nginx-error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $1/nginx-body;
  proxy_temp_path $1/nginx-proxy;
  upstream backend { server 127.0.0.1:$2; keepalive 64; }
  server {
    listen 127.0.0.1:$3;
    location / {
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }
  }
}
NGINX
}

# http_registration TAP_PORT: a registration whose one hook
# (com.example.bench) is an HTTP backend at the tap on TAP_PORT,
# subscribed to tool.before intercepts with a 5 s deadline.
http_registration() {
	cat <<REG
{"protocolVersion":"draft","hooks":[{"id":"com.example.bench","transport":{"type":"http","url":"http://127.0.0.1:$1/agent-hooks"},
 "subscriptions":[{"events":["tool.before"],"mode":"intercept","timeoutMs":5000,"failurePolicy":"fail-closed","content":{"default":"body"}}]}]}
REG
}

# post_lua: the wrk script posting a conforming 1 KiB hooks/intercept for
# tool.before; each request gets its own id (JSON-RPC id = event id).
post_lua() {
	cat <<'LUA'
-- Every request carries its own id (JSON-RPC id = event id), unique across
-- threads and across wrk runs (the run nonce comes as the script argument),
-- so the tap sees distinct events, not retries.
local nthreads = 0
function setup(thread)
  nthreads = nthreads + 1
  thread:set("tid", nthreads)
end
function init(args)
  nonce = args[1] or "000000"
  path = args[2] or "/agent-hooks" -- an absolute URL for the forward proxy
  counter = 0
end
local function body(id)
  return '{"jsonrpc":"2.0","id":"' .. id .. '","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"' .. id ..
    '","source":"https://harness.example/bench","type":"tool.before","time":"2026-12-02T09:00:00Z",' ..
    '"harness":{"name":"bench-harness","version":"1.0.0"},"session":{"id":"sess-bench"},' ..
    '"tool":{"name":"read_file","kind":"file_read","input":{"path":"README.md","note":"PAD"},"origin":"native"},' ..
    '"call":{"id":"call-' .. id .. '"},"path":"example"},"capabilities":{"effects":["deny"]}}}'
end
local pad = 1024 - #body("000000-t0-000000000") + 3
function request()
  counter = counter + 1
  local id = string.format("%s-t%d-%09d", nonce, tid % 10, counter)
  local b = body(id):gsub("PAD", string.rep("x", pad))
  return wrk.format("POST", path, {["Content-Type"] = "application/json", ["Authorization"] = "Bearer bench-token-0123456789"}, b)
end
LUA
}

# audited METRICS_PORT: the audited share of the exchange items (a request
# and its response each) of the HTTP tap serving metrics on the port.
audited() {
	curl -s "http://127.0.0.1:$1/metrics" | awk '
		/^ahp_tap_http_requests_total/ {req += $2}
		/^ahp_tap_audit_dropped_total/ {drop = $2}
		END {if (req > 0) printf "%.0f%% (%d requests; %d of their %d frames and notes dropped)", 100 * (1 - drop / (2 * req)), req, drop, 2 * req; else print "n/a"}'
}
