package speaker

import (
	"strings"

	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"
)

// serviceEvents records Kubernetes Events on Services, named by key
// (namespace/name); a Service gone from the lister gets none.
type serviceEvents struct {
	services corelisters.ServiceLister
	rec      record.EventRecorder
}

func (e serviceEvents) eventf(key, eventType, reason, format string, args ...any) {
	ns, name, _ := strings.Cut(key, "/")
	svc, err := e.services.Services(ns).Get(name)
	if err != nil {
		return
	}
	e.rec.Eventf(svc, eventType, reason, format, args...)
}
