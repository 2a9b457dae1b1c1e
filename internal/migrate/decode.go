package migrate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Source is a MetalLB configuration: its objects by kind, and what else
// the input held that is worth a word in the report.
type Source struct {
	Pools       []mlbPool
	L2Advs      []mlbL2Adv
	BGPAdvs     []mlbBGPAdv
	Peers       []mlbPeer
	Communities []mlbCommunity
	BFDs        []mlbBFD
	// others are objects that are not MetalLB configuration Herald
	// converts, with the report entry each deserves.
	others []Entry
}

// AddYAML adds the objects of a YAML or JSON stream (several documents,
// Lists); where names the input in errors.
func (s *Source) AddYAML(where string, data []byte) error {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for n := 1; ; n++ {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: document %d: %w", where, n, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
			continue
		}
		if err := s.AddJSON(raw); err != nil {
			return fmt.Errorf("%s: document %d: %w", where, n, err)
		}
	}
}

// AddJSON adds one object (or the items of a List).
func (s *Source) AddJSON(raw []byte) error {
	var head struct {
		object `json:",inline"`
		Items  []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return err
	}
	if strings.HasSuffix(head.Kind, "List") && head.Items != nil {
		for i, item := range head.Items {
			if err := s.AddJSON(item); err != nil {
				return fmt.Errorf("items[%d]: %w", i, err)
			}
		}
		return nil
	}
	group, version, _ := strings.Cut(head.APIVersion, "/")
	if version == "" {
		group = "" // the core group: "v1"
	}
	name := describe(head.Kind, head.Metadata.Namespace, head.Metadata.Name)
	if group != MetalLBGroup {
		s.others = append(s.others, foreignEntry(group, head.Kind, head.Metadata.Name, name))
		return nil
	}
	if version != "v1beta1" && version != "v1beta2" {
		s.others = append(s.others, Entry{Severity: Dropped, Object: name,
			Message: fmt.Sprintf("%s is not read (only v1beta1 and v1beta2); the API server converts on read: export with kubectl get -o yaml", head.APIVersion)})
		return nil
	}
	return s.addMetalLB(head.Kind, name, raw)
}

func (s *Source) addMetalLB(kind, name string, raw []byte) error {
	var unknown []string
	var err error
	switch kind {
	case KindIPAddressPool:
		unknown, err = decodeInto(raw, &s.Pools)
	case KindL2Advertisement:
		unknown, err = decodeInto(raw, &s.L2Advs)
	case KindBGPAdvertisement:
		unknown, err = decodeInto(raw, &s.BGPAdvs)
	case KindBGPPeer:
		unknown, err = decodeInto(raw, &s.Peers)
	case KindCommunity:
		unknown, err = decodeInto(raw, &s.Communities)
	case KindBFDProfile:
		unknown, err = decodeInto(raw, &s.BFDs)
	case "ServiceL2Status", "ServiceBGPStatus", "ConfigurationState":
		s.others = append(s.others, Entry{Severity: Note, Object: name, Message: "MetalLB's status object: nothing to convert (Herald reports in Service conditions and events)"})
	case "AddressPool":
		s.others = append(s.others, Entry{Severity: Dropped, Object: name,
			Message: "AddressPool was removed in MetalLB v0.13.2; write it as an IPAddressPool (and an L2Advertisement or BGPAdvertisement) first"})
	default:
		s.others = append(s.others, Entry{Severity: Dropped, Object: name, Message: "this MetalLB kind has no Herald counterpart"})
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	for _, f := range unknown {
		s.others = append(s.others, Entry{Severity: Dropped, Object: name, Field: "spec." + f,
			Message: "a field this converter does not know (a newer MetalLB?); translate it by hand"})
	}
	return nil
}

// decodeInto appends one object decoded from raw and returns the spec
// fields the converter does not know (a newer MetalLB's), which would
// otherwise be lost without a word.
func decodeInto[T any](raw []byte, list *[]T) ([]string, error) {
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	*list = append(*list, v)
	var generic struct {
		Spec map[string]json.RawMessage `json:"spec"`
	}
	if err := json.Unmarshal(raw, &generic); err != nil {
		return nil, err
	}
	known := specFields(reflect.TypeOf(v))
	var unknown []string
	for k := range generic.Spec {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	return unknown, nil
}

// specFields are the JSON names of the fields of T's Spec.
func specFields(t reflect.Type) map[string]bool {
	out := map[string]bool{}
	f, ok := t.FieldByName("Spec")
	if !ok {
		return out
	}
	for i := 0; i < f.Type.NumField(); i++ {
		name, _, _ := strings.Cut(f.Type.Field(i).Tag.Get("json"), ",")
		out[name] = true
	}
	return out
}

// foreignEntry is the report entry for an object outside metallb.io.
func foreignEntry(group, kind, objName, name string) Entry {
	switch {
	case group == "frrk8s.metallb.io":
		return Entry{Severity: Dropped, Object: name, Message: "FRR-K8s configuration (raw FRR settings, received routes, extra neighbors) has no Herald counterpart: Herald embeds GoBGP and reads no FRR configuration"}
	case group == "" && kind == "ConfigMap" && (objName == "bgpextras" || objName == "frr-k8s-bgpextras"):
		return Entry{Severity: Dropped, Object: name, Message: "raw FRR configuration appended by MetalLB's FRR mode has no Herald counterpart"}
	case group == "" && kind == "ConfigMap" && objName == "config":
		return Entry{Severity: Dropped, Object: name, Message: "MetalLB's ConfigMap configuration (before v0.13) is not read; convert it to CRs with MetalLB's configmaptocrs tool first"}
	}
	return Entry{Severity: Note, Object: name, Message: "not a MetalLB configuration object; ignored"}
}

// describe names an object in the report: "BGPPeer metallb-system/tor".
func describe(kind, namespace, name string) string {
	if namespace == "" {
		return kind + " " + name
	}
	return kind + " " + namespace + "/" + name
}
