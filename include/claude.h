/*
 * claude.h -- kept for applications written against the first layout: the
 * public interface lives in <claudelua/claude.h>.
 */
#include "claudelua/claude.h"
