package k8s

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// ClientOptions say how to reach the API server.
type ClientOptions struct {
	// Kubeconfig path; empty means in-cluster configuration.
	Kubeconfig string
	// QPS and Burst of the client's rate limiter. Zero means 200/400
	// (client-go's defaults, 5/10, would take minutes to serve 1,000
	// Services); a negative QPS means no client-side limit: the caller
	// bounds its requests in flight and the API server's Priority and
	// Fairness queues them.
	QPS   float32
	Burst int
	// UserAgent names the component in the API server's logs.
	UserAgent string
}

// RESTConfig builds the client configuration.
func RESTConfig(o ClientOptions) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if o.Kubeconfig == "" {
		cfg, err = rest.InClusterConfig()
	} else {
		cfg, err = clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes client configuration: %w", err)
	}
	cfg.QPS, cfg.Burst = o.QPS, o.Burst
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 200, 400
	}
	if o.UserAgent != "" {
		cfg.UserAgent = o.UserAgent
	}
	return cfg, nil
}
