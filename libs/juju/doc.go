// Package juju is the runtime a Go charm stands on: it reads the JUJU_*
// environment of one hook or action into a typed [Event], routes that event
// to a [Handler] with a [Router], and gives the handler typed clients for
// Juju's hook tools (relation-get, secret-add, status-set, ...), all bundled
// in a [HookContext].
//
// # Running a charm
//
// Juju runs the charm's dispatch executable once per hook or action, with
// JUJU_DISPATCH_PATH set to hooks/<hook> or actions/<action> and the hook
// tools first on PATH. A Go charm's main reads the event, builds the context
// over an [ExecRunner], and lets [Main] route it:
//
//	func main() {
//		ev, err := juju.ReadEvent(os.LookupEnv)
//		if err != nil {
//			fmt.Fprintln(os.Stderr, err)
//			os.Exit(1)
//		}
//		hc := juju.NewHookContext(ev, juju.ExecRunner{})
//		r := juju.NewRouter()
//		r.Handle(juju.Install, install)
//		r.HandleRelation("slurmd", juju.RelationChanged, slurmdChanged)
//		r.HandleAction("node-config", nodeConfig)
//		os.Exit(juju.Main(context.Background(), hc, r.Dispatch, os.Stderr))
//	}
//
// [Main] treats a hook without a handler as harmless (one DEBUG log line,
// exit 0), fails an action without a handler with action-fail, and logs a
// handler's error once through juju-log before exiting 1, so that Juju
// discards the hook's relation, secret and port changes and retries it.
//
// # Hook tools
//
// Every hook tool family has its own client type over a [Runner]:
// [Relations], [Config], [Actions], [Status], [Leadership], [Secrets],
// [Ports], [Network] and [Logger]. The clients build exactly the command
// lines Juju 3.6 documents (always asking for --format=json where the tool
// has output) and decode the JSON into Go types. A tool that exits non-zero
// becomes a *[HookToolError] carrying the tool, its arguments (secret values
// redacted), the exit code and stderr; use errors.As to inspect it. Juju's
// error texts are not a stable interface, so the error is not classified
// further (no "not found" or "not leader" kinds): check leadership with
// [Leadership.IsLeader] before doing leader-only work instead.
//
// Relation data is written with `relation-set [--app] -r ID --file -` and
// the settings as a YAML (JSON-flavoured) map on stdin, so values never
// appear in the process list and have no length limit; an empty value
// deletes a key, as in Juju.
//
// # Testing
//
// Package jujutest implements [Runner] as an in-memory model of one unit:
// a State goes in, a handler runs against the same command lines the real
// tools receive, and the new State comes out, with Juju's rules enforced.
package juju
