/*
 * task.c -- a task's wait seen from C. claude.async's tasks all wait in one function
 * (`suspend`): it marks the task waiting, yields core.task_suspend, and clears the marks when
 * the task goes on, whoever resumed it. C code that took what a task waits for (core.pending's
 * reader: the answer of the task's request, its entry taken from the set) resumes the
 * coroutine here with the values that end the wait, with no Lua between the line read and
 * the task, and changes nothing of the task itself. What the resume gives that is not the
 * task's next wait (it ended, failed, or yielded wrongly) goes to async's settle_step, as
 * its own resumes' do.
 *
 *   core.task_suspend                      what a waiting task yields (a light userdata)
 *   core.task_waker(settle_step, timed_out)  async's: settle_step(task, co, ok, ...) and
 *                                          timed_out(task) (its wait's deadline passed)
 */
#include "task.h"

#include "budget/budget.h"

/* core.task_suspend's address, and the registry keys of settle_step and timed_out. */
static const char SUSPEND = 's', SETTLE_KEY = 'S', TIMED_OUT_KEY = 't';

int claude_task_wake(lua_State *L, void **budgets, lua_State *co, int task, int nvalues) {
  int status, nres;
  if (co == L || lua_status(co) != LUA_YIELD || !lua_checkstack(co, nvalues + 1)) return 0;
  if (*budgets == NULL) *budgets = claude_resume_state(L);
  lua_pushboolean(co, 1);
  lua_xmove(L, co, nvalues);
  status = claude_resume_in(*budgets, L, co, nvalues + 1, &nres);
  /* waits again (yielded core.task_suspend; no full userdata has that address) */
  if (status == LUA_YIELD && nres == 1 && lua_touserdata(co, -1) == (void *)&SUSPEND) {
    lua_pop(co, 1);
    return 1;
  }
  /* anything else is settle_step's (task, co, ok, ...): as core.resume returns it */
  if (status != LUA_OK && status != LUA_YIELD) nres = 1; /* the error object */
  luaL_checkstack(L, nres + 4, "wake");
  lua_rawgetp(L, LUA_REGISTRYINDEX, &SETTLE_KEY);
  lua_pushvalue(L, task);
  lua_pushthread(co);
  lua_xmove(co, L, 1);
  lua_pushboolean(L, status == LUA_OK || status == LUA_YIELD);
  lua_xmove(co, L, nres);
  lua_call(L, nres + 3, 0);
  return 1;
}

void claude_task_timed_out(claude_ctx *ctx, lua_State *L, int task) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &TIMED_OUT_KEY);
  lua_pushvalue(L, task);
  claude_pcall(ctx, L, 1);
}

/* core.task_waker(settle_step, timed_out) */
static int l_task_waker(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  lua_settop(L, 2);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &TIMED_OUT_KEY);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &SETTLE_KEY);
  return 0;
}

void claude_open_task(lua_State *L) {
  lua_pushlightuserdata(L, (void *)&SUSPEND);
  lua_setfield(L, -2, "task_suspend");
  lua_pushcfunction(L, l_task_waker);
  lua_setfield(L, -2, "task_waker");
}
