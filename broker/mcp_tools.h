/* SPDX-License-Identifier: MIT */
/* The tools of `airlock mcp`: definitions and argument checks. */
#ifndef AIRLOCK_BROKER_MCP_TOOLS_H
#define AIRLOCK_BROKER_MCP_TOOLS_H

#include <cjson/cJSON.h>

struct mcp_tool {
  const char *name, *title, *description;
  const char *input_schema, *output_schema; /* JSON Schema text */
};

/* The tool of that name, or NULL. */
const struct mcp_tool *mcp_tool_find (const char *name);
/* tools/list's "tools" array. */
cJSON *mcp_tools_list (void);
/* NULL when args fit the tool's input schema; else what is wrong, in
 * words (malloc'd). */
char *mcp_tool_check_args (const struct mcp_tool *tool, const cJSON *args);

#endif
