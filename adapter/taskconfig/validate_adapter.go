package taskconfig

import (
	"net/url"
	"strings"
)

func (v *validator) adapterConfig() {
	a, doc := v.b.Adapter, v.b.adapterDoc
	switch {
	case a.Adapter.Name == "":
		v.errorf(doc, "adapter.name", "set adapter.name, e.g. landing-zone", "adapter.name is required")
	case len(a.Adapter.Name) > 63 || !adapterNameRE.MatchString(a.Adapter.Name):
		v.errorf(doc, "adapter.name", "use lowercase letters, digits and '-' (at most 63)", "adapter.name %q is not a valid name: it names task queues, labels and the %sSuccessful condition", a.Adapter.Name, "<Adapter>")
	}
	api := a.Clients.HyperFleetAPI
	if api.BaseURL != "" {
		if u, err := url.Parse(api.BaseURL); err != nil || u.Scheme == "" || u.Host == "" {
			v.warnf(doc, "clients.hyperfleet_api.base_url", "set an absolute URL such as http://hyperfleet-api:8000, or pass --api-base-url to the worker",
				"%q is not an absolute URL; it must be overridden before the adapter runs", api.BaseURL)
		}
	}
	if !backoffs[api.RetryBackoff] {
		v.errorf(doc, "clients.hyperfleet_api.retry_backoff", "use exponential, linear or constant", "unknown retry_backoff %q", api.RetryBackoff)
	}
	if api.RetryAttempts < 0 {
		v.errorf(doc, "clients.hyperfleet_api.retry_attempts", "use 0 or more", "retry_attempts must not be negative")
	}
	if api.Auth != nil && api.Auth.TokenPath != "" && !strings.HasPrefix(api.Auth.TokenPath, "/") {
		v.errorf(doc, "clients.hyperfleet_api.auth.token_path", "use an absolute path", "token_path %q must be absolute", api.Auth.TokenPath)
	}
	if a.Clients.Broker != nil || a.Broker != nil {
		v.warnf(doc, "clients.broker", "remove it when no longer deploying upstream's broker adapter",
			"the broker section is ignored: Temporal delivers reconcile requests instead of a message broker")
	}
}
