package v1beta1

// LabelDrain on a Node asks Herald to stop announcing from it: the node
// becomes ineligible, exactly as with the cluster autoscaler's
// ToBeDeletedByClusterAutoscaler taint, so L2 hands its addresses over
// make-before-break and BGP withdraws after the graceful-shutdown wait.
// Present, it drains unless strconv.ParseBool reads its value as false
// (the rule of node.kubernetes.io/exclude-from-external-load-balancers).
// kubectl herald drain sets it to "true"; anyone who may edit Nodes may
// set it by hand. A label, not an annotation, so that
// kubectl get nodes -l herald.dev/drain lists the draining nodes.
// Cordon alone never drains.
const LabelDrain = "herald.dev/drain"
