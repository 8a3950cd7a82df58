/*
 * wake.c -- keeps claude.pollfd() truthful.
 *
 * An application that runs its own event loop polls the descriptor of
 * claude's private loop and calls claude.step() when it is readable. Work
 * started outside step (a task, a timer, a process, a write, a query, from
 * the application's own callbacks) only queues libuv watchers: the kernel
 * learns of them at the loop's next turn, so nothing would ever make the
 * descriptor readable. claude_wake() sends on an async handle whose eventfd
 * is in the loop's epoll set: the descriptor becomes readable, the
 * application steps, and that turn registers the new watchers. Inside step
 * (or any turn of the loop) no wake is needed: the turn sees the work itself.
 */
#include "core.h"

static void wake_cb(uv_async_t *h) { (void)h; }

static void wake_closed(uv_handle_t *h) {
  claude_handle_closed((claude_ctx *)h->data);
}

/* For a loop the context owns, right after uv_loop_init: the handle, and
 * one turn that cannot run anything else (the loop is new) so that its
 * descriptor joins the epoll set. Unreferenced: it never keeps the loop
 * alive. A loop the application owns is run by the application: no wake. */
void claude_wake_open(claude_ctx *ctx) {
  if (!ctx->owns_loop || ctx->wake_init) return;
  if (uv_async_init(ctx->loop, &ctx->wake, wake_cb) != 0) return;
  ctx->wake.data = ctx;
  ctx->wake_init = 1;
  claude_handle_opened(ctx);
  uv_run(ctx->loop, UV_RUN_NOWAIT);
  uv_unref((uv_handle_t *)&ctx->wake);
}

/* Called where work is added; cheap when the loop is running (nothing) and
 * when a wake is already pending (libuv sends once until the loop turns). */
void claude_wake(claude_ctx *ctx) {
  if (ctx->wake_init && ctx->run_L == NULL && !ctx->closing) uv_async_send(&ctx->wake);
}

void claude_wake_close(claude_ctx *ctx) {
  if (!ctx->wake_init) return;
  ctx->wake_init = 0;
  uv_close((uv_handle_t *)&ctx->wake, wake_closed);
}
