package bench

import (
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// FakePebble answers the part of Pebble's API that libs/service/pebble uses (layers, services,
// service actions and change waits) at once and without running anything, so that a hook
// benchmark measures the operator rather than Pebble's 1 s start check. Services known from
// layers start inactive; start and restart make them active, stop inactive.
type FakePebble struct {
	srv      *http.Server
	mu       sync.Mutex
	services map[string]*fakeService
	changes  int
}

type fakeService struct {
	startup, current string
	since            time.Time
}

// StartFakePebble serves the fake on a unix socket at path.
func StartFakePebble(path string) (*FakePebble, error) {
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	p := &FakePebble{services: map[string]*fakeService{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/layers", p.layers)
	mux.HandleFunc("/v1/services", p.servicesHandler)
	mux.HandleFunc("/v1/changes/", p.change)
	p.srv = &http.Server{Handler: mux}
	go p.srv.Serve(l)
	return p, nil
}

// Close stops serving.
func (p *FakePebble) Close() error { return p.srv.Close() }

func reply(w http.ResponseWriter, code int, typ string, result any, change string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	body := map[string]any{"type": typ, "status-code": code, "status": http.StatusText(code), "result": result}
	if change != "" {
		body["change"] = change
	}
	json.NewEncoder(w).Encode(body)
}

func replyError(w http.ResponseWriter, code int, msg string) {
	reply(w, code, "error", map[string]string{"message": msg}, "")
}

func (p *FakePebble) layers(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Layer string `json:"layer"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		replyError(w, 400, err.Error())
		return
	}
	// libs/service/pebble sends layers as JSON, which is YAML.
	var layer struct {
		Services map[string]struct {
			Startup string `json:"startup"`
		} `json:"services"`
	}
	if err := json.Unmarshal([]byte(req.Layer), &layer); err != nil {
		replyError(w, 400, "cannot parse layer: "+err.Error())
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for name, s := range layer.Services {
		svc := p.services[name]
		if svc == nil {
			svc = &fakeService{startup: "disabled", current: "inactive", since: time.Now()}
			p.services[name] = svc
		}
		if s.Startup != "" {
			svc.startup = s.Startup
		}
	}
	reply(w, 200, "sync", true, "")
}

func (p *FakePebble) servicesHandler(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.Method == http.MethodGet {
		var names []string
		if q := r.URL.Query().Get("names"); q != "" {
			names = strings.Split(q, ",")
		}
		infos := []map[string]any{}
		for name, s := range p.services {
			if len(names) > 0 && !slices.Contains(names, name) {
				continue
			}
			infos = append(infos, map[string]any{"name": name, "startup": s.startup, "current": s.current, "current-since": s.since})
		}
		reply(w, 200, "sync", infos, "")
		return
	}
	var req struct {
		Action   string   `json:"action"`
		Services []string `json:"services"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		replyError(w, 400, err.Error())
		return
	}
	for _, name := range req.Services {
		s := p.services[name]
		if s == nil {
			replyError(w, 400, "service \""+name+"\" does not exist")
			return
		}
		switch req.Action {
		case "start", "restart", "replan", "autostart":
			s.current = "active"
		case "stop":
			s.current = "inactive"
		}
		s.since = time.Now()
	}
	p.changes++
	reply(w, 202, "async", nil, strconv.Itoa(p.changes))
}

func (p *FakePebble) change(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/v1/changes/"), "/wait")
	now := time.Now()
	reply(w, 200, "sync", map[string]any{"id": id, "kind": "service", "summary": "", "status": "Done",
		"ready": true, "spawn-time": now, "ready-time": now}, "")
}
