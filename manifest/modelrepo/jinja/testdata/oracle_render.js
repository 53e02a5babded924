// Differential-test oracle: renders chat templates with @huggingface/jinja, the reference
// Hugging Face maintains for chat templates outside Python.
// Usage: node oracle_render.js NODE_MODULES < {"templates": {name: source}, "cases": [vars, ...]}
// Output: {name: [{"out": text} | {"error": message}, ...]}
const path = require('path');
const fs = require('fs');
const { Template } = require(path.join(process.argv[2], '@huggingface/jinja'));
const input = JSON.parse(fs.readFileSync(0, 'utf8'));
const out = {};
for (const [name, src] of Object.entries(input.templates)) {
  let tpl = null;
  let parseError = null;
  try {
    tpl = new Template(src);
  } catch (e) {
    parseError = String(e && e.message || e);
  }
  out[name] = input.cases.map((vars) => {
    if (parseError !== null) return { error: parseError };
    try {
      // raise_exception and strftime_now are built in.
      return { out: tpl.render(vars) };
    } catch (e) {
      return { error: String(e && e.message || e) };
    }
  });
}
process.stdout.write(JSON.stringify(out));
