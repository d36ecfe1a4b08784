"""The jinja2 template of the run report (diagnostics/report.py renders it).

Kept as a Python string so it ships with the package without package-data
settings.  Plain HTML and CSS carry everything; the small script at the end
only adds "show one graph" on the legend and "expand all".
"""

TEMPLATE = r"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ title }}</title>
<style>
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; max-width: 1200px;
       padding: 12px 20px 40px; color: #1d2330; background: #fff; }
h1 { font-size: 22px; margin: 8px 0 2px; } h2 { font-size: 18px; margin: 28px 0 8px; border-bottom: 1px solid #dde; }
h3 { font-size: 16px; margin: 22px 0 6px; }
.meta { color: #667; font-size: 12px; }
table { border-collapse: collapse; margin: 6px 0; }
th, td { border: 1px solid #dde; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f3f4f8; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.stats span { display: inline-block; margin: 4px 14px 4px 0; } .stats b { font-size: 18px; }
.bad { color: #b00020; font-weight: 600; } .ok { color: #1b7f3b; }
code, pre, .src { font: 12.5px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
pre { background: #f7f7fa; border: 1px solid #e4e4ec; padding: 8px; overflow: auto; margin: 4px 0; max-height: 30em; }
.src { border: 1px solid #dde; border-collapse: collapse; width: 100%; }
.src td { border: 0; padding: 0 6px; white-space: pre; }
.src td.ln { color: #99a; text-align: right; width: 3em; user-select: none; border-right: 1px solid #dde; }
.src td.tag { width: 7em; font-size: 11px; color: #445; white-space: nowrap; }
.src tr.py td.code { background: repeating-linear-gradient(135deg, #fff 0 6px, #f1f1f1 6px 12px); }
.src tr.brk td.code { box-shadow: inset 3px 0 0 #d32f2f; }
.src tr.note td { white-space: normal; background: #fff5f5; color: #7a1010; font: 12px/1.4 system-ui, sans-serif;
                  padding: 3px 8px 5px 3.6em; }
.src tr.note b { color: #b00020; }
.chip { display: inline-block; border: 1px solid #99a; border-radius: 3px; padding: 0 4px; margin-right: 2px;
        font-size: 11px; }
.legend span { margin-right: 10px; cursor: pointer; }
.swatch { display: inline-block; width: 12px; height: 12px; border: 1px solid #889; vertical-align: -2px; }
.hatch { background: repeating-linear-gradient(135deg, #fff 0 3px, #ccc 3px 6px); }
details { margin: 4px 0; } summary { cursor: pointer; }
.hint { color: #254; } .cat { font-size: 11px; color: #556; background: #eef; border-radius: 3px; padding: 0 4px; }
body.focus .src tr.code-row:not(.sel) td.code { background: none !important; }
svg text { font: 11px system-ui, sans-serif; fill: #334; }
</style>
</head>
<body>
<h1>{{ title }}</h1>
<div class="meta">{{ command }} &middot; {{ when }} &middot; {{ versions }}</div>

<section id="overview">
<h2>Overview</h2>
<div class="stats">
  <span><b>{{ totals.functions }}</b> compiled functions</span>
  <span><b>{{ totals.entries }}</b> cache entries</span>
  <span><b>{{ totals.graphs }}</b> graphs ({{ totals.ops }} ops)</span>
  <span><b {% if totals.breaks %}class="bad"{% endif %}>{{ totals.breaks }}</b> graph breaks</span>
  <span><b {% if totals.recompiles %}class="bad"{% endif %}>{{ totals.recompiles }}</b> recompiles</span>
  <span><b {% if totals.python %}class="bad"{% endif %}>{{ totals.python }}</b> ran as Python</span>
  <span>compile time <b>{{ "%.0f"|format(totals.trace_ms + totals.backend_ms) }} ms</b>
        (tracing {{ "%.0f"|format(totals.trace_ms) }} ms, backend {{ "%.0f"|format(totals.backend_ms) }} ms)</span>
</div>
<table class="functions">
<thead><tr><th>function</th><th>where</th><th>calls</th><th>cache entries</th><th>graphs</th><th>breaks</th>
<th>recompiles</th><th>compile ms</th><th>fell back</th></tr></thead>
<tbody>
{% for f in functions %}
<tr><td><a href="#{{ f.id }}">{{ f.name }}</a>{% if f.label %} <span class="cat">{{ f.label }}</span>{% endif %}</td>
<td><code>{{ f.where }}</code></td><td class="num">{{ f.calls }}</td><td class="num">{{ f.n_entries }}</td>
<td class="num">{{ f.n_graphs }}</td><td class="num">{{ f.n_breaks }}</td><td class="num">{{ f.n_recompiles }}</td>
<td class="num">{{ "%.1f"|format(f.compile_ms) }}</td>
<td>{% if f.fell_back %}<span class="bad">yes</span>{% else %}<span class="ok">no</span>{% endif %}</td></tr>
{% endfor %}
</tbody>
</table>
{% if not functions %}<p>Nothing was compiled in this run.</p>{% endif %}
</section>

{% if notes %}
<section id="notes">
<h2>Notes</h2>
<ul>{% for n in notes %}<li>{{ n }}</li>{% endfor %}</ul>
</section>
{% endif %}

{% if breaks %}
<section id="breaks">
<h2>Graph breaks by reason</h2>
{% for b in breaks %}
<div class="break-group">
<p><b>{{ b.reason }}</b> <span class="cat">{{ b.category }}</span><br>
<span class="hint">Hint: {{ b.hint }}</span></p>
<ul>{% for p in b.places %}<li><code>{{ p.where }}</code> <code>{{ p.source }}</code>{% if p.count > 1 %} (&times;{{ p.count }}){% endif %}</li>{% endfor %}</ul>
</div>
{% endfor %}
</section>
{% endif %}

{% if timeline.bars %}
<section id="timeline">
<h2>Compile timeline</h2>
<p class="meta">Each bar is one compile: tracing <span class="swatch" style="background:#5b8def"></span>
then backend <span class="swatch" style="background:#f0a040"></span>; {{ "%.0f"|format(timeline.total_ms) }} ms from the first recorded event.</p>
<svg width="{{ timeline.width }}" height="{{ timeline.height }}" role="img" aria-label="compile timeline">
{% for r in timeline.rows %}<text x="4" y="{{ r.y + 4 }}">{{ r.name[:26] }}</text>{% endfor %}
{% for b in timeline.bars %}
<g><title>{{ b.title }}</title>
<rect x="{{ "%.1f"|format(b.x) }}" y="{{ b.y }}" width="{{ "%.1f"|format(b.wt) }}" height="{{ b.h }}" fill="#5b8def"></rect>
<rect x="{{ "%.1f"|format(b.x + b.wt) }}" y="{{ b.y }}" width="{{ "%.1f"|format(b.wb) }}" height="{{ b.h }}" fill="#f0a040"></rect></g>
{% endfor %}
</svg>
</section>
{% endif %}

{% for f in functions %}
<section class="function" id="{{ f.id }}">
<h2>{{ f.name }} <span class="meta"><code>{{ f.where }}</code>{% if f.label %} &middot; {{ f.label }}{% endif %}</span></h2>
<p>{{ f.calls }} calls &middot; {{ f.n_entries }} cache entries &middot; {{ f.n_graphs }} graphs &middot;
{{ f.n_breaks }} breaks &middot; {{ f.n_recompiles }} recompiles &middot; compile {{ "%.1f"|format(f.compile_ms) }} ms
{% if f.fell_back %}&middot; <span class="bad">ran as Python</span>{% endif %}</p>
<div class="legend">
{% for g in f.legend %}<span data-graph="{{ g.n }}"><span class="swatch" style="background:{{ g.colour }}"></span> graph {{ g.n }} ({{ g.ops }} ops)</span>{% endfor %}
<span><span class="swatch hatch"></span> ran as Python</span>
<span><span class="swatch" style="background:#d32f2f"></span> graph break</span>
</div>
<table class="src">
{% for r in f.rows %}
<tr class="code-row{% if r.graphs %} captured{% endif %}{% if r.python %} py{% endif %}{% if r.breaks %} brk{% endif %}"
    data-graphs="{{ r.graphs|join(' ') }}"><td class="ln">{{ r.lineno }}</td><td class="tag">{% for g in r.graphs %}<span class="chip">g{{ g }}</span>{% endfor %}{% if r.python %}<span class="chip">py</span>{% endif %}</td><td class="code"{% if r.colour %} style="background:{{ r.colour }}"{% endif %}>{{ r.text }}</td></tr>
{% for b in r.breaks %}
<tr class="note"><td colspan="3"><b>graph break:</b> {{ b.reason }} <span class="cat">{{ b.category }}</span><br><span class="hint">Hint: {{ b.hint }}</span></td></tr>
{% endfor %}
{% endfor %}
</table>
{% if f.truncated %}<p class="meta">(source cut at {{ f.rows|length }} lines)</p>{% endif %}
{% if f.elsewhere %}
<p class="meta">Also captured, from functions it calls:
{% for x in f.elsewhere %}<code>{{ x.file }}</code> ({{ x.lines }} lines){% if not loop.last %}, {% endif %}{% endfor %}</p>
{% endif %}

{% if f.python %}
<h3>Ran as Python</h3>
<ul class="python">{% for p in f.python %}<li>{{ p.reason }}<br><span class="hint">Hint: {{ p.hint }}</span></li>{% endfor %}</ul>
{% endif %}

{% if f.recompiles %}
<h3>Recompiles</h3>
<table class="recompiles">
<thead><tr><th>at ms</th><th>guard that failed</th><th>compiled for</th><th>now</th></tr></thead>
<tbody>
{% for r in f.recompiles %}
<tr><td class="num">{{ "%.0f"|format(r.at_ms) }}</td><td><code>{{ r.guard or r.reason }}</code>
{% if r.guard and r.reason %}<br><span class="meta">{{ r.reason }}</span>{% endif %}</td>
<td><code>{{ r.expected if r.expected is not none else "" }}</code></td>
<td><code>{{ r.now if r.now is not none else "" }}</code></td></tr>
{% endfor %}
</tbody>
</table>
{% endif %}

{% if f.disk %}
<h3>Persistent cache: not used or not stored</h3>
<ul class="disk">{% for d in f.disk %}<li><b>{{ d.what }}</b>: {{ d.detail }}{% if d.path %} <code>{{ d.path }}</code>{% endif %}</li>{% endfor %}</ul>
{% endif %}

<h3>Cache entries</h3>
{% for e in f.entries %}
<details class="entry">
<summary>entry {{ e.k }}{% if e.resume %} (resume function){% endif %}:
{% if e.graph is not none %}<span class="swatch" style="background:{{ e.colour }}"></span> graph {{ e.graph }}, {{ e.ops }} ops{% elif e.fallback %}<span class="bad">runs as Python</span>{% else %}no graph{% endif %}
&middot; {{ e.n_guards }} guards &middot; trace {{ "%.1f"|format(e.trace_ms) }} ms, backend {{ "%.1f"|format(e.backend_ms) }} ms
{% if e["break"] %}&middot; <span class="bad">ends at a graph break</span>{% endif %}{% if e.loaded_from %} &middot; loaded from disk{% endif %}</summary>
{% if e.loaded_from %}<p><b>Loaded from disk</b> (the warm start: not traced or compiled in this run): <code>{{ e.loaded_from }}</code></p>{% endif %}
{% if e["break"] %}<p><b>Graph break:</b> {{ e["break"].reason.splitlines()[0] }}{% if e["break"].filename %} at <code>{{ e["break"].filename }}:{{ e["break"].lineno }}</code> <code>{{ e["break"].source_line }}</code>{% endif %}<br>
<span class="hint">Hint: {{ e["break"].hint }}</span></p>{% endif %}
{% if e.fallback %}<p><b>Runs as Python:</b> {{ e.fallback }}<br><span class="hint">Hint: {{ e.fallback_hint }}</span></p>{% endif %}
{% if e.specializations %}<p>Specializations:</p><ul>{% for s in e.specializations %}<li><code>{{ s }}</code></li>{% endfor %}</ul>{% endif %}
<div class="guards"><b>Guards</b>
<pre>{% for g in e.guards %}{{ g }}
{% endfor %}{% if e.guards_more %}... {{ e.guards_more }} more
{% endif %}</pre></div>
{% if e.fx %}<div class="fx"><b>FX graph</b> ({{ e.ops }} ops)
<pre>{{ e.fx }}{% if e.fx_more %}
... {{ e.fx_more }} more lines{% endif %}</pre></div>{% endif %}
</details>
{% endfor %}
</section>
{% endfor %}

<script>
// Optional: click a graph in a legend to show only its lines; "e" expands every entry.
document.querySelectorAll('.legend span[data-graph]').forEach(function (el) {
  el.addEventListener('click', function () {
    var sec = el.closest('section'), g = el.getAttribute('data-graph');
    var on = !(document.body.classList.contains('focus') && sec.dataset.focus === g);
    document.body.classList.toggle('focus', on); sec.dataset.focus = on ? g : '';
    sec.querySelectorAll('tr.code-row').forEach(function (tr) {
      tr.classList.toggle('sel', on && tr.dataset.graphs.split(' ').indexOf(g) >= 0);
    });
  });
});
document.addEventListener('keydown', function (ev) {
  if (ev.key === 'e') document.querySelectorAll('details.entry').forEach(function (d) { d.open = !d.open; });
});
</script>
</body>
</html>
"""
