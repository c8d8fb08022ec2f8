package main

import (
	"github.com/spf13/cobra"

	"github.com/chronoshq/chronos/client"
)

// apiFlags are the flags every API command shares: where the API is, the
// key, and the output format.
type apiFlags struct {
	env *environ
	url string
	key string
	out output
}

// addAPIFlags adds --url, --key and -o to cmd and its subcommands; their
// defaults come from CHRONOS_URL and CHRONOS_API_KEY.
func addAPIFlags(cmd *cobra.Command, env *environ) *apiFlags {
	a := &apiFlags{env: env, out: output{w: env.stdout}}
	pf := cmd.PersistentFlags()
	pf.StringVar(&a.url, "url", envOr(env, "CHRONOS_URL", "http://localhost:8080"), "instance base URL (env CHRONOS_URL)")
	// The key is read from the environment at run time, not as the flag's
	// default, so --help never prints it.
	pf.StringVar(&a.key, "key", "", "API key (default: env CHRONOS_API_KEY)")
	addOutputFlag(cmd, &a.out)
	return a
}

// client returns the API client the flags describe, after checking -o.
func (a *apiFlags) client() (*client.Client, error) {
	if err := a.out.check(); err != nil {
		return nil, err
	}
	key := a.key
	if key == "" {
		key = a.env.getenv("CHRONOS_API_KEY")
	}
	c, err := client.New(a.url, key, client.WithUserAgent("chronos-cli/"+version))
	if err != nil {
		return nil, usageError{err}
	}
	return c, nil
}
