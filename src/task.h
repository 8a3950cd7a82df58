/*
 * task.h -- a task's wait seen from C (task.c): C code that took what a waiting
 * task waits for (core.pending's reader, the answer of its request) resumes it
 * here, into claude.async's one wait (`suspend`), which does the rest.
 */
#ifndef CLAUDE_TASK_H
#define CLAUDE_TASK_H

#include "context.h"

/* Resumes the task at L's slot `task` (absolute), waiting in coroutine co, with `true` and
 * the nvalues values on top of L's stack (they go to co): its wait returns them. Returns 1,
 * the values taken; or 0 when co does not wait (the values left: the caller calls the task
 * instead). A resume that does not end in the task's next wait goes to async's settle_step.
 * `budgets`: the caller's cache of the state's budgets (NULL at first). May raise
 * (settle_step's errors). The caller has claimed the wake: nothing else resumes that wait. */
int claude_task_wake(lua_State *L, void **budgets, lua_State *co, int task, int nvalues);
/* Ends the wait of the task at L's slot `task` as timed out (async's abort), in a protected
 * call. */
void claude_task_timed_out(claude_ctx *ctx, lua_State *L, int task);
/* Adds core.task_suspend and core.task_waker to the module table on top of the stack. */
void claude_open_task(lua_State *L);

#endif
