package inventoryapi

import (
	"net/http"

	"github.com/o2ims-operator/o2ims-operator/inventory"
	"github.com/o2ims-operator/o2ims-operator/nbi"
)

// The performance dictionaries (O2IMS Table 3.2.3-1: Performance Dictionary List and Performance
// Dictionary, inventory 1.1.0), one per resource type (nbi/inventory: PerformanceDictionary), served
// under every major and spelling: oran-o2ims serves none, so the spec's paths are followed.

func (a *API) performanceRoutes(v string) {
	m := a.mux
	m.Handle("GET "+v+"/performanceDictionaries", nbi.VerbList, a.fromView(a.listPerformanceDictionaries))
	m.Handle("GET "+v+"/performanceDictionaries/{performanceDictionaryId}", nbi.VerbList, a.fromView(a.getPerformanceDictionary))
	m.Handle("GET "+v+"/resourceTypes/{resourceTypeId}/performanceDictionary", nbi.VerbList, a.fromView(a.getResourceTypePerformanceDictionary))
}

func (a *API) listPerformanceDictionaries(w http.ResponseWriter, r *http.Request) error {
	return a.list(w, r, PerformanceDictionarySchema, inventory.PerformanceDictionaries(a.cfg, a.view.Snapshot().Types))
}

func (a *API) getPerformanceDictionary(w http.ResponseWriter, r *http.Request) error {
	id, err := pathUUID(r, "performanceDictionaryId", "performance dictionary")
	if err != nil {
		return err
	}
	for _, d := range inventory.PerformanceDictionaries(a.cfg, a.view.Snapshot().Types) {
		if d.ID == id {
			a.writeEntry(w, r, d)
			return nil
		}
	}
	return nbi.NewProblem(http.StatusNotFound, "performance dictionary %q not found", id)
}

func (a *API) getResourceTypePerformanceDictionary(w http.ResponseWriter, r *http.Request) error {
	id, err := pathUUID(r, "resourceTypeId", "resource type")
	if err != nil {
		return err
	}
	t, ok := a.view.Type(id)
	if !ok {
		return nbi.NewProblem(http.StatusNotFound, "resource type %q not found", id)
	}
	a.writeEntry(w, r, inventory.PerformanceDictionary(a.cfg, t))
	return nil
}
