package v1beta1

// MemberlistSecretKey is the data key of the member-list Secret
// (herald-memberlist by default): the controller writes the speakers'
// encryption key under it, and the speakers mount it as their key file or,
// until the kubelet has filled that volume, read it from the Secret.
const MemberlistSecretKey = "key"
