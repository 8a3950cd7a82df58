--- The help of `claudelua mcp` (`claudelua mcp --help`): every option, the general ones
-- before the bounds and the OAuth ones. The options themselves are read by
-- claude.mcp.server.command.
-- @module claude.mcp.server.usage
return [[
usage: claudelua mcp [options] tools.lua [args]
       claudelua mcp --proxy [options] URL | COMMAND [args]   serve a remote MCP server
       claudelua mcp install [options] tools.lua [args]   add it to an MCP client's
                          configuration (claudelua mcp install --help)

Serve the claude.server values that tools.lua returns (a server, a list of servers, or a
table name -> server) as an MCP server. tools.lua runs like a script: its arguments are in
`...` and `arg`.

Options:
  --http [HOST:]PORT      serve Streamable HTTP at http://HOST:PORT/mcp (HOST defaults to
                          127.0.0.1, loopback); every server of the file is served, side
                          by side
  --stateless             HTTP only: no sessions, no initialize needed, no requests to the client
  --allowed-origins LIST  HTTP only: the Origin values accepted (comma-separated, or *);
                          by default, on a loopback HOST, only local origins
  --allowed-hosts LIST    HTTP only: the Host names accepted (comma-separated); by default,
                          on a loopback HOST, localhost, 127.0.0.1 and [::1]
  --session-timeout SECONDS  HTTP only: end a session idle this long (default 1800; 0: never)
  --server NAME           stdio: serve the server named NAME (needed when the file returns
                          several)
  --watch                 reload tools.lua when it changes; clients stay connected and are
                          sent list_changed; a file that fails to load keeps the previous tools
  --proxy                 serve the MCP server at URL (Streamable HTTP or HTTP+SSE) or
                          started by COMMAND (stdio) instead of a tools file: all its tools,
                          resources, templates, prompts and completions, its list changes
                          and resource updates, over stdio or --http
  --proxy-header 'NAME: VALUE'  --proxy URL: a header sent with every request
                          (repeatable)
  --proxy-oauth           --proxy URL: authorize with OAuth (the browser opens on the
                          authorization page; a redirect to 127.0.0.1 completes it)
  --proxy-token-store FILE  --proxy-oauth: keep the tokens in FILE between runs
  --proxy-timeout SECONDS  --proxy: how long a request to the remote may take (default 60)
  --grace SECONDS         on SIGINT/SIGTERM or stdin EOF, calls in flight get this long to
                          finish before they are cancelled (default 5)
  --max-message BYTES     the largest message accepted (default 16777216); a larger one gets
                          an error and the server goes on
  --request-timeout SECONDS  how long a request to the client (ctx.sample, ctx.elicit,
                          ctx.roots, ctx.request) may take (default 60; 0: no limit)
  --state-key-file FILE   protocol 2026-07-28: the key that signs the requestState of
                          multi round-trip requests (at least 16 bytes), shared by the
                          processes behind one load balancer (default: the environment
                          variable CLAUDELUA_MCP_STATE_KEY, else a random key per process)
  --state-ttl SECONDS     how long a requestState stays valid (default 600)
  --node NAME             HTTP only: this process's name behind a load balancer; the ids of
                          its tasks start with it (NAME.), so that the balancer can route
                          tasks/* requests (Mcp-Name) to the process that has the task
  --tasks URL             HTTP only: where the tasks of protocol 2026-07-28 and the events of
                          its listens are shared by the replicas behind a load balancer:
                          'memory' (default: this process alone) or
                          redis://[[user:]password@]host[:port][/db] (docs/scaling.md;
                          --node defaults to a random name then; default: the environment
                          variable CLAUDELUA_MCP_TASKS, which keeps a password out of ps)
  --task-lease SECONDS    with --tasks redis://: a task whose replica stops renewing its
                          lease this long fails (default 15)
  --skills DIR            serve the Agent Skills of DIR (each directory with a SKILL.md) on
                          every server, beside those of its own skills option (repeatable)
  --stuck-exit SECONDS    a tool call still busy this long past its `run` budget where no
                          budget can stop it (a __gc that spins) ends the server with
                          status 70, for a supervisor to restart it (default 10; 0: never)
  -h, --help              show this help

Bounds per client (HTTP only; each a positive number, 'none' for no bound; docs/mcp-server.md):
  --max-sessions N           sessions open (1024); past it the least recently used idle
                             one is closed, or the initialize gets 503
  --max-calls N              requests in flight in the server, both eras (1024); 503 past it
  --max-session-calls N      requests in flight per session (64); an error past it
  --max-post-calls N         requests served from one POST (32); an error past it
  --max-batch N              messages in one POST (64); 400 past it
  --history-bytes BYTES      events kept for Last-Event-ID per session (262144)
  --max-queued BYTES         bytes waiting to be sent to one client (1048576); past it
                             the client is dropped
  --write-timeout SECONDS    a client that takes nothing for this long is dropped (60)
  --max-connections N        connections at once (1024, fewer under a low ulimit -n);
                             503 past it
  --max-tasks N              tasks kept in the server (1024); past it the oldest finished
                             one is forgotten, or the call gets an error
  --max-client-tasks N       tasks kept per client (64; its OAuth principal, else its
                             address): the same, for one client
  --task-input-timeout SECONDS  a task waiting for tasks/update this long fails (600)
  --task-ttl SECONDS         a task is kept this long after its creation (3600)
  --task-result-bytes BYTES  bytes of finished tasks' results kept (33554432); the oldest
                             are forgotten first
  --max-subscriptions N      URIs (or task ids) per listen or per session (256)
  --max-uri BYTES            the longest URI subscribed to (2048)

OAuth (HTTP only; for the servers without an auth option of their own, see docs/oauth.md):
  --introspection-url URL    accept the bearer tokens this RFC 7662 endpoint says are
                             active; --client-id ID (and the secret in the environment
                             variable CLAUDELUA_MCP_CLIENT_SECRET) authenticate us to it
  --jwks-url URL --issuer URL  accept JWTs signed by these keys, from this issuer
  --authorization-server URL  the issuer clients get tokens from (repeatable; the
                             protected resource metadata names it; default: --issuer)
  --resource URL             the server's public URL (default: the URL served)
  --required-scopes LIST     scopes every request's token must have (comma-separated)
  --scopes-supported LIST    scopes the metadata offers (default: the required ones)
  --audience LIST            the accepted token audiences (default: the resource)
  --no-auth                  serve a HOST other hosts can reach without authentication, on
                             purpose (refused otherwise)

Over stdio, stdout carries the protocol alone: print, io.write and logs go to stderr. The
server ends at stdin EOF.
]]
