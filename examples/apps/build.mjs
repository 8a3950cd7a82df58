// Bundles the view into one self-contained HTML file, as hosts load a view (its sandbox
// reaches no other file): view.js, with the App class of @modelcontextprotocol/ext-apps,
// inlined into view.html.
//   npm install                                   # the repository's pinned packages
//   node examples/apps/build.mjs [OUT]            # default: examples/apps/build/view.html
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const out = process.argv[2] ?? join(here, "build", "view.html");

const { outputFiles } = await esbuild.build({
  entryPoints: [join(here, "view.js")], bundle: true, write: false, format: "esm",
  platform: "browser", target: "es2022", minify: true, legalComments: "none",
});
const script = '<script type="module" src="./view.js"></script>';
const page = readFileSync(join(here, "view.html"), "utf8");
if (!page.includes(script)) throw new Error(`view.html has no ${script}`);
// esbuild escapes "</script" inside the code, so the inline script ends where it should
const html = page.replace(script, () => `<script type="module">${outputFiles[0].text}</script>`);
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, html);
console.log(`${out}: ${html.length} bytes`);
