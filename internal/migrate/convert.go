package migrate

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/herald-lb/herald/api/v1beta1"
)

// AnnotationMigratedFrom on every converted object names its MetalLB
// original.
const AnnotationMigratedFrom = "herald.dev/migrated-from"

// Options of a conversion.
type Options struct {
	// HeraldNamespace is where Herald reads BGP password Secrets
	// (default herald-system).
	HeraldNamespace string
}

// Result is the Herald configuration and the report.
type Result struct {
	// Objects are Herald objects in apply order: BFD profiles, communities,
	// pools, peers, advertisements; each kind by name.
	Objects []runtime.Object
	Report  Report
}

// converter holds one conversion's names and report.
type converter struct {
	src   *Source
	opts  Options
	rep   *Report
	names map[string]map[ref]string // by MetalLB kind
	alias map[ref]string            // community alias -> Herald alias
	value map[ref]string            // community alias -> value
	dual  bool                      // the pools hold both families
}

// Convert turns the MetalLB configuration into Herald's.
func Convert(src *Source, opts Options) Result {
	if opts.HeraldNamespace == "" {
		opts.HeraldNamespace = "herald-system"
	}
	res := Result{}
	res.Report.Entries = append(res.Report.Entries, src.others...)
	c := &converter{src: src, opts: opts, rep: &res.Report, names: map[string]map[ref]string{}}
	c.nameAll()
	for _, b := range src.BFDs {
		if o := c.bfd(b); o != nil {
			res.Objects = append(res.Objects, o)
		}
	}
	for _, cm := range src.Communities {
		if o := c.community(cm); o != nil {
			res.Objects = append(res.Objects, o)
		}
	}
	for _, p := range src.Pools {
		if o := c.pool(p); o != nil {
			res.Objects = append(res.Objects, o)
		}
	}
	c.samePriorities()
	for _, p := range src.Peers {
		if o := c.peer(p); o != nil {
			res.Objects = append(res.Objects, o)
		}
	}
	for _, a := range src.L2Advs {
		if o := c.l2(a); o != nil {
			res.Objects = append(res.Objects, o)
		}
	}
	for _, a := range src.BGPAdvs {
		if o := c.bgpAdv(a); o != nil {
			res.Objects = append(res.Objects, o)
		}
	}
	sortObjects(res.Objects)
	return res
}

func sortObjects(objs []runtime.Object) {
	rank := func(o runtime.Object) int {
		switch o.(type) {
		case *v1beta1.BFDProfile:
			return 0
		case *v1beta1.Community:
			return 1
		case *v1beta1.IPAddressPool:
			return 2
		case *v1beta1.BGPPeer:
			return 3
		case *v1beta1.L2Advertisement:
			return 4
		}
		return 5
	}
	sort.SliceStable(objs, func(i, j int) bool {
		if rank(objs[i]) != rank(objs[j]) {
			return rank(objs[i]) < rank(objs[j])
		}
		return objs[i].(metav1.Object).GetName() < objs[j].(metav1.Object).GetName()
	})
}

// nameAll gives every object, alias and Secret its Herald name.
func (c *converter) nameAll() {
	byKind := map[string][]ref{}
	add := func(kind string, o object) {
		byKind[kind] = append(byKind[kind], ref{o.Metadata.Namespace, o.Metadata.Name})
	}
	for _, o := range c.src.Pools {
		add(KindIPAddressPool, o.object)
	}
	for _, o := range c.src.L2Advs {
		add(KindL2Advertisement, o.object)
	}
	for _, o := range c.src.BGPAdvs {
		add(KindBGPAdvertisement, o.object)
	}
	for _, o := range c.src.Peers {
		add(KindBGPPeer, o.object)
	}
	for _, o := range c.src.Communities {
		add(KindCommunity, o.object)
	}
	for _, o := range c.src.BFDs {
		add(KindBFDProfile, o.object)
	}
	for kind, refs := range byKind {
		c.names[kind] = clusterNames(refs, objectName)
	}
	var aliases []ref
	c.value = map[ref]string{}
	for _, cm := range c.src.Communities {
		for _, a := range cm.Spec.Communities {
			r := ref{cm.Metadata.Namespace, a.Name}
			if _, dup := c.value[r]; !dup {
				aliases = append(aliases, r)
			}
			c.value[r] = a.Value
		}
	}
	c.alias = clusterNames(aliases, aliasName)
	var v4, v6 bool
	for _, p := range c.src.Pools {
		for _, a := range p.Spec.Addresses {
			if strings.Contains(a, ":") {
				v6 = true
			} else {
				v4 = true
			}
		}
	}
	c.dual = v4 && v6
}

// meta is the Herald object's metadata: its cluster-scoped name, the
// MetalLB object's labels (pool selectors match them), and where it came
// from. A rename is reported.
func (c *converter) meta(kind string, o object) metav1.ObjectMeta {
	name := c.names[kind][ref{o.Metadata.Namespace, o.Metadata.Name}]
	if name != o.Metadata.Name {
		c.rep.add(Note, c.who(kind, o), "metadata.name", "named %s in Herald (the name %s is used in more than one namespace); references to it are renamed too, and Services naming it in an address-pool annotation must use the new name", name, o.Metadata.Name)
	}
	return metav1.ObjectMeta{
		Name:        name,
		Labels:      o.Metadata.Labels,
		Annotations: map[string]string{AnnotationMigratedFrom: o.APIVersion + " " + describe(kind, o.Metadata.Namespace, o.Metadata.Name)},
	}
}

func (c *converter) who(kind string, o object) string {
	return describe(kind, o.Metadata.Namespace, o.Metadata.Name)
}

// refs translates names of other objects (of kind) in o's namespace.
func (c *converter) refs(kind string, o object, field string, names []string) []string {
	var out []string
	for _, n := range names {
		out = append(out, c.refName(kind, o, field, n))
	}
	return out
}

func (c *converter) refName(kind string, o object, field, n string) string {
	if h, ok := c.names[kind][ref{o.Metadata.Namespace, n}]; ok {
		return h
	}
	c.rep.add(Note, c.who(o.Kind, o), field, "names %s %s, which is not in the input; the name is kept", kind, n)
	return n
}

// pool converts an IPAddressPool.
func (c *converter) pool(p mlbPool) *v1beta1.IPAddressPool {
	who := c.who(KindIPAddressPool, p.object)
	out := &v1beta1.IPAddressPool{TypeMeta: typeMeta("IPAddressPool"), ObjectMeta: c.meta(KindIPAddressPool, p.object)}
	for i, a := range p.Spec.Addresses {
		field := fmt.Sprintf("spec.addresses[%d]", i)
		h, err := heraldRange(a)
		switch {
		case err != nil:
			c.rep.add(Dropped, who, field, "%q: %v", a, err)
			continue
		case h != a:
			c.rep.add(Note, who, field, "%q is written %q, the form Herald's schema accepts (same addresses)", a, h)
		}
		if len(out.Spec.Addresses) == 64 {
			c.rep.add(Dropped, who, field, "Herald takes at most 64 ranges per pool; split the pool")
			continue
		}
		out.Spec.Addresses = append(out.Spec.Addresses, h)
	}
	if len(out.Spec.Addresses) == 0 {
		c.rep.add(Dropped, who, "", "no usable address range; the pool is left out")
		return nil
	}
	out.Spec.AutoAssign = p.Spec.AutoAssign
	out.Spec.AvoidBuggyIPs = p.Spec.AvoidBuggyIPs
	if sa := p.Spec.ServiceAllocation; sa != nil {
		h := &v1beta1.ServiceAllocation{Namespaces: sa.Namespaces, NamespaceSelectors: sa.NamespaceSelectors, ServiceSelectors: sa.ServiceSelectors}
		switch {
		case sa.Priority == nil:
		case *sa.Priority == 0:
			c.rep.add(Changed, who, "spec.serviceAllocation.priority",
				"0 means \"no priority\" in MetalLB (tried after every pool with one); in Herald 0 is the highest priority, so it is left unset, which Herald also tries last")
		case *sa.Priority < 0 || *sa.Priority > 1000000:
			c.rep.add(Dropped, who, "spec.serviceAllocation.priority", "%d is outside Herald's range 0-1000000; set a priority that keeps your order", *sa.Priority)
		default:
			h.Priority = ptr(int32(*sa.Priority))
		}
		if h.Priority != nil || len(h.Namespaces)+len(h.NamespaceSelectors)+len(h.ServiceSelectors) > 0 {
			out.Spec.ServiceAllocation = h
		}
	}
	return out
}

// samePriorities reports pools sharing a priority: MetalLB picks among them
// at random, Herald by name.
func (c *converter) samePriorities() {
	by := map[int][]string{}
	for _, p := range c.src.Pools {
		if sa := p.Spec.ServiceAllocation; sa != nil && sa.Priority != nil && *sa.Priority > 0 {
			by[*sa.Priority] = append(by[*sa.Priority], c.who(KindIPAddressPool, p.object))
		}
	}
	for prio, pools := range by {
		if len(pools) < 2 {
			continue
		}
		sort.Strings(pools)
		for _, who := range pools {
			c.rep.add(Changed, who, "spec.serviceAllocation.priority",
				"pools %s share priority %d: MetalLB picks among them at random, Herald in name order", strings.Join(pools, ", "), prio)
		}
	}
}

// heraldRange writes a MetalLB address range the way Herald's schema
// takes it: a CIDR without host bits, or first-last without spaces.
func heraldRange(a string) (string, error) {
	a = strings.TrimSpace(a)
	if first, last, isRange := strings.Cut(a, "-"); isRange {
		f, err1 := netip.ParseAddr(strings.TrimSpace(first))
		l, err2 := netip.ParseAddr(strings.TrimSpace(last))
		switch {
		case err1 != nil || err2 != nil:
			return "", fmt.Errorf("not a range of two IP addresses")
		case f.Is4() != l.Is4():
			return "", fmt.Errorf("the ends are of different IP families")
		case l.Less(f):
			return "", fmt.Errorf("the first address is above the last")
		}
		return f.String() + "-" + l.String(), nil
	}
	if p, err := netip.ParsePrefix(a); err == nil {
		return p.Masked().String(), nil
	}
	if ip, err := netip.ParseAddr(a); err == nil {
		return netip.PrefixFrom(ip, ip.BitLen()).String(), nil
	}
	return "", fmt.Errorf("neither a CIDR nor a range first-last")
}

// l2 converts an L2Advertisement.
func (c *converter) l2(a mlbL2Adv) *v1beta1.L2Advertisement {
	who := c.who(KindL2Advertisement, a.object)
	out := &v1beta1.L2Advertisement{TypeMeta: typeMeta("L2Advertisement"), ObjectMeta: c.meta(KindL2Advertisement, a.object)}
	out.Spec.IPAddressPools = c.refs(KindIPAddressPool, a.object, "spec.ipAddressPools", a.Spec.IPAddressPools)
	out.Spec.IPAddressPoolSelectors = a.Spec.IPAddressPoolSelectors
	out.Spec.NodeSelectors = a.Spec.NodeSelectors
	for i, ifc := range a.Spec.Interfaces {
		if ifc == "" || len(ifc) > 15 || strings.ContainsAny(ifc, " \t/:") {
			c.rep.add(Dropped, who, fmt.Sprintf("spec.interfaces[%d]", i), "%q is not a Linux interface name Herald accepts", ifc)
			continue
		}
		out.Spec.Interfaces = append(out.Spec.Interfaces, ifc)
	}
	if len(a.Spec.Interfaces) == 0 {
		c.rep.add(Changed, who, "spec.interfaces",
			"unset: MetalLB answers on every host interface; Herald on the interfaces with an address in the VIP's subnet, else the default route's; list the interfaces if that differs")
	}
	return out
}

func typeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: kind}
}

func ptr[T any](v T) *T { return &v }
