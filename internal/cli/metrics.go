package cli

import (
	"context"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tetherhq/tether/internal/telemetry/export"
)

// newRegistry is the process's metrics registry: tether's metrics are
// added by the packages given it, the Go runtime and process ones here.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	export.RegisterRuntime(reg)
	return reg
}

// metricsHandler serves reg in Prometheus' text format.
func metricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

// opsOff reports whether an address flag turns the listener off.
func opsOff(addr string) bool { return addr == "" || addr == "off" }

// opsListener serves h on addr (an operations port: metrics, health)
// until stop is called, which waits for it.
type opsListener struct {
	ln   net.Listener
	srv  *http.Server
	done chan struct{}
}

func listenOps(addr string, h http.Handler) (*opsListener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	o := &opsListener{ln: ln, done: make(chan struct{}),
		srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}}
	go func() {
		defer close(o.done)
		o.srv.Serve(ln) // ends with stop (ErrServerClosed)
	}()
	return o, nil
}

func (o *opsListener) addr() net.Addr { return o.ln.Addr() }

func (o *opsListener) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if o.srv.Shutdown(ctx) != nil {
		o.srv.Close()
	}
	<-o.done
}

// agentOps is `tether agent --http-addr`: /metrics, /healthz (the
// process answers) and /readyz (ready() is nil: 200, else 503 with why).
// It has no login: it is meant for loopback or a cluster-internal
// network, and shows no session ids, paths or names.
func agentOps(reg *prometheus.Registry, ready func(context.Context) error) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metricsHandler(reg))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		err := ready(ctx)
		cancel()
		if err != nil {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "not ready: "+err.Error()+"\n")
			return
		}
		io.WriteString(w, "ready\n")
	})
	return mux
}
