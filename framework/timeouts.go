package framework

import (
	"net/http"
	"time"
)

// ServerTimeouts bound an HTTP listener's connections, so that a slow or idle client cannot hold one
// (and its goroutine) open: the time to send the headers, the whole request, to take the whole answer,
// and an idle keep-alive connection's life. Zero fields take the defaults below.
type ServerTimeouts struct {
	ReadHeader, Read, Write, Idle time.Duration
}

// The health listener's defaults: its requests are bodiless GETs; an answer may wait for the liveness
// probes (each bounded at 5 s); a scraper's keep-alive connection (every 30 s in manifests/monitoring)
// outlives one interval but not three or four.
var defaultHealthTimeouts = ServerTimeouts{ReadHeader: 5 * time.Second, Read: 10 * time.Second, Write: time.Minute, Idle: 2 * time.Minute}

// withDefaults fills the zero fields from def.
func (t ServerTimeouts) withDefaults(def ServerTimeouts) ServerTimeouts {
	for _, f := range []struct {
		v *time.Duration
		d time.Duration
	}{
		{&t.ReadHeader, def.ReadHeader}, {&t.Read, def.Read}, {&t.Write, def.Write}, {&t.Idle, def.Idle},
	} {
		if *f.v <= 0 {
			*f.v = f.d
		}
	}
	return t
}

// server is an http.Server with these timeouts (defaults: the health listener's) serving h.
func (t ServerTimeouts) server(h http.Handler) *http.Server {
	t = t.withDefaults(defaultHealthTimeouts)
	return &http.Server{Handler: h, ReadHeaderTimeout: t.ReadHeader, ReadTimeout: t.Read, WriteTimeout: t.Write,
		IdleTimeout: t.Idle, MaxHeaderBytes: 64 << 10}
}
