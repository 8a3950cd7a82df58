#!/bin/sh
exec luacheck "$@"
