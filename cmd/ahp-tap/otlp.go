package main

import (
	"flag"
	"io"

	"github.com/ahp-tap/ahp-tap/otlpexport"
)

// otlpFlags is --otlp-endpoint, shared by stdio, http and replay.
type otlpFlags struct {
	endpoint string
}

func (o *otlpFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&o.endpoint, "otlp-endpoint", "", "also send each finding as an OpenTelemetry log record, a span per exchange and the metrics to the OTLP/HTTP collector at `URL` (e.g. http://127.0.0.1:4318; the standard OTEL_EXPORTER_OTLP_* variables are honoured, and enable it too; OTEL_TRACES_EXPORTER, OTEL_METRICS_EXPORTER or OTEL_LOGS_EXPORTER=none turns one off)")
}

// open starts the exporter, or returns nil when no collector is named. A
// bad URL is a usage error.
func (o *otlpFlags) open(capture string, diag io.Writer) (*otlpexport.Exporter, error) {
	if !otlpexport.Enabled(o.endpoint) {
		return nil, nil
	}
	x, err := otlpexport.New(otlpexport.Config{Endpoint: o.endpoint, Capture: capture, Version: version, Diag: diag})
	if err != nil {
		return nil, usageError("--otlp-endpoint: %v", err)
	}
	return x, nil
}
