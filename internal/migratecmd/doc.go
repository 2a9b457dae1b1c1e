// Package migratecmd is `kubectl herald migrate`: it reads MetalLB's
// configuration from files or from a cluster (ReadCluster), and with
// --plan what MetalLB runs there (ReadInventory), converts it with
// internal/migrate and prints Herald's YAML or the takeover script, with
// the report of what changed on the way. It only reads from the cluster.
package migratecmd
