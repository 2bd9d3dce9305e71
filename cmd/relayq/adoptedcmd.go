package main

// `relayq queue adopted` and `relayq queue release-adopted`: the queue
// owner leases of the cluster, read from and steered through Redis (the
// leases live there, and an adopted queue may be on any node), with the
// config file's cluster: section.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/relayq/relayq/cluster"
	"github.com/relayq/relayq/config"
)

var adoptedHelp = helpOnly("adopted", "queue adopted [--config FILE]",
	"List the queue files that nodes of the cluster adopted from lost nodes and still deliver: path (as the adopter mounts it), identity, adopter and fencing token. "+
		"An adopted queue is let go when it is empty, or on `relayq queue release-adopted`.",
	"  relayq queue adopted --config /etc/relayq/relayq.yaml\n")

var releaseAdoptedHelp = helpOnly("release-adopted", "queue release-adopted [--config FILE] ID|PATH",
	"Ask the node that adopted a queue (by identity, or by the path `relayq queue adopted` shows) to stop delivering it and let it go, "+
		"so that its owner, back again, may open it. The adopter hears it within a third of the lease's TTL.",
	"  relayq queue release-adopted --config /etc/relayq/relayq.yaml /var/lib/relayq/volumes/b/queue.db\n")

// clusterLeases are the leases of the config file's cluster.
func clusterLeases(cfgPath string) (*cluster.Leases, error) {
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return nil, err
	}
	if cfg.Cluster.RedisURL == "" {
		return nil, errors.New("queue: no cluster.redis_url in the config: a single node adopts no queue")
	}
	return cluster.NewLeases(clusterConfig(cfg), nil, nil)
}

// adoptedArgs parses --config and the positional arguments of c.
func adoptedArgs(c command, args []string, out io.Writer) (cfgPath string, pos []string, err error) {
	fs := helpFlagSet(c, out)
	defineConfigFile(fs, &cfgPath)
	err = fs.Parse(args)
	return cfgPath, fs.Args(), err
}

func adoptedCmd(args []string, out io.Writer) error {
	path, pos, err := adoptedArgs(adoptedHelp, args, out)
	if helpAsked(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("queue adopted: unexpected argument %q", pos[0])
	}
	l, err := clusterLeases(path)
	if err != nil {
		return err
	}
	defer l.Close()
	owners, err := l.Owners(context.Background())
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "QUEUE\tID\tADOPTER\tTOKEN")
	for _, o := range owners {
		if o.Adopted {
			fmt.Fprintf(w, "%s\t%s\t%s\t%d\n", o.Path, o.ID, o.Node, o.Token)
		}
	}
	return w.Flush()
}

func releaseAdoptedCmd(args []string, out io.Writer) error {
	path, pos, err := adoptedArgs(releaseAdoptedHelp, args, out)
	if helpAsked(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return errors.New("queue release-adopted: give one queue's identity or path (see `relayq queue adopted`)")
	}
	which := pos[0]
	l, err := clusterLeases(path)
	if err != nil {
		return err
	}
	defer l.Close()
	ctx := context.Background()
	owners, err := l.Owners(ctx)
	if err != nil {
		return err
	}
	id := which
	for _, o := range owners {
		if o.Path == which {
			id = o.ID
		}
	}
	node, err := l.AskRelease(ctx, id)
	if err != nil {
		return err
	}
	if node == "" {
		return fmt.Errorf("queue release-adopted: %s is not an adopted queue (see `relayq queue adopted`)", which)
	}
	fmt.Fprintf(out, "asked %s to let queue %s go\n", node, which)
	return nil
}
