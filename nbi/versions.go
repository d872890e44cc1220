package nbi

import (
	"net/http"
	"slices"
	"strings"
)

// Versions of an API (O2IMS clause 3.1.8, after ETSI GS NFV-SOL 013 clause 9): an API name is served
// under one or more major versions ({apiRoot}/{apiName}/v{N}), each serving the versions its history
// table gives for that major; the spellings of the name (O-RAN's O2ims_infrastructureX and
// openshift-kni/oran-o2ims's o2ims-infrastructureX) are aliases of one implementation.

// Major is one major version of an API: its path segment ("v2") and the versions it serves, oldest
// first (the last is the one used when a request names none).
type Major struct {
	Segment  string
	Versions []string
}

// Latest is the newest version the major serves.
func (mj Major) Latest() string { return mj.Versions[len(mj.Versions)-1] }

// Versioned claims every spelling in roots (problems rendered by render) and, under each, every major:
// routes(prefix, major) registers the API's routes under prefix ({root}/{segment}), and the api_versions
// resources are answered at {root}/{segment}/api_versions (that major's versions) and {root}/api_versions
// (the newest major's, as oran-o2ims answers it). A request's Version header is checked against the
// versions of the prefix it is under (checkVersion). Every spelling and major is authorised as the first
// root's first major ({roots[0]}/{majors[0]}/...): one implementation, so one grant, and the O2IMS roles
// name that spelling only.
func (m *Mux) Versioned(roots []string, render Renderer, majors []Major, routes func(prefix string, mj Major)) {
	newest := majors[len(majors)-1]
	canonical := roots[0] + "/" + majors[0].Segment
	for _, r := range roots {
		m.AuthorizeAs(r, roots[0])
		for _, mj := range majors {
			m.AuthorizeAs(r+"/"+mj.Segment, canonical)
		}
		m.s.roots = append(m.s.roots, root{path: r, render: render, majors: majors})
		m.Handle("GET "+r+"/api_versions", VerbNone, m.versions(r+"/"+newest.Segment, newest))
		for _, mj := range majors {
			prefix := r + "/" + mj.Segment
			m.Handle("GET "+prefix+"/api_versions", VerbNone, m.versions(prefix, mj))
			routes(prefix, mj)
		}
	}
}

func (m *Mux) versions(prefix string, mj Major) Op {
	return func(w http.ResponseWriter, r *http.Request) error {
		info := APIVersionInformation{URIPrefix: prefix}
		for _, v := range mj.Versions {
			info.APIVersions = append(info.APIVersions, APIVersionEntry{Version: v})
		}
		m.Write(w, r, http.StatusOK, info)
		return nil
	}
}

// servedVersions is the major a path is under, of a versioned root (ok false: not versioned): for
// {root}/api_versions, the newest major.
func (s *Server) servedVersions(path string) (Major, bool) {
	for _, rt := range s.roots {
		if len(rt.majors) == 0 || !strings.HasPrefix(path, rt.path+"/") {
			continue
		}
		seg, _, _ := strings.Cut(path[len(rt.path)+1:], "/")
		for _, mj := range rt.majors {
			if mj.Segment == seg {
				return mj, true
			}
		}
		if seg == "api_versions" {
			return rt.majors[len(rt.majors)-1], true
		}
	}
	return Major{}, false
}

// checkVersion applies SOL 013 clause 9.4 to a request under a versioned root: the answer carries the
// Version it is given in (the one asked for, or the major's newest); a Version the major does not serve
// is refused with 406 Not Acceptable and a ProblemDetails naming the versions served. A request without
// the header is served in the newest version (lenient: O2IMS clause 3.1.8.2 has the consumer send it,
// but oran-o2ims and every SMO built on it send none). Build metadata after the version ("1.2.0-impl:…",
// "+build") is not compared.
func (s *Server) checkVersion(w http.ResponseWriter, r *http.Request) *Problem {
	mj, ok := s.servedVersions(r.URL.Path)
	if !ok {
		return nil
	}
	asked := strings.TrimSpace(r.Header.Get("Version"))
	if asked == "" {
		w.Header().Set("Version", mj.Latest())
		return nil
	}
	core := asked
	if i := strings.IndexAny(core, "-+"); i >= 0 {
		core = core[:i]
	}
	if !slices.Contains(mj.Versions, core) {
		return NewProblem(http.StatusNotAcceptable, "Version %q is not served under .../%s; served: %s",
			Truncate(asked, 60), mj.Segment, strings.Join(mj.Versions, ", "))
	}
	w.Header().Set("Version", core)
	return nil
}
