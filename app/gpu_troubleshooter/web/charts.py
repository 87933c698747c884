"""Server-rendered SVG charts (no JavaScript, nothing fetched from elsewhere)."""
from datetime import datetime, timedelta, timezone
from html import escape

# Okabe-Ito palette: distinguishable with colour-vision deficiencies.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#999999"]
MAX_SERIES = 7  # the rest is summed as "other"


def daily_counts(rows, start, days):
    """rows: (created_at, failure_class[, count]) -> (dates, {class: [count per day]}, {class: total}).
    created_at is a datetime, or a date for the anonymous counts kept by retention."""
    dates = [start + timedelta(days=i) for i in range(days)]
    index = {d: i for i, d in enumerate(dates)}
    series = {}
    for created, cls, *count in rows:
        if isinstance(created, datetime):
            if created.tzinfo is None:
                created = created.replace(tzinfo=timezone.utc)
            created = created.astimezone(timezone.utc).date()
        i = index.get(created)
        if i is None:
            continue
        name = cls or "no known failure"
        series.setdefault(name, [0] * days)[i] += count[0] if count else 1
    ranked = sorted(series, key=lambda k: -sum(series[k]))
    if len(ranked) > MAX_SERIES:
        other = [0] * days
        for name in ranked[MAX_SERIES:]:
            other = [a + b for a, b in zip(other, series.pop(name))]
        ranked = ranked[:MAX_SERIES] + ["other"]
        series["other"] = other
    ordered = {k: series[k] for k in ranked}
    return dates, ordered, {k: sum(v) for k, v in ordered.items()}


def stacked_bars(title, dates, series, width=760, height=260):
    """One stacked bar per day, a legend below; an accessible <title>/<desc>."""
    left, right, top, bottom = 40, 10, 10, 40
    legend_rows = (len(series) + 2) // 3
    total_h = height + legend_rows * 20 + 10
    plot_w, plot_h = width - left - right, height - top - bottom
    per_day = [sum(v[i] for v in series.values()) for i in range(len(dates))]
    peak = max(per_day + [1])
    step = max(1, -(-peak // 4))
    peak = step * 4
    bar_w = plot_w / max(len(dates), 1)
    desc = ", ".join(f"{name}: {sum(v)}" for name, v in series.items()) or "no data in this period"
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {total_h}" role="img" '
           f'class="chart" aria-labelledby="t-{id(series)} d-{id(series)}">',
           f'<title id="t-{id(series)}">{escape(title)}</title>',
           f'<desc id="d-{id(series)}">Totals over {len(dates)} days: {escape(desc)}</desc>']
    for k in range(5):  # horizontal grid with counts
        y = top + plot_h - plot_h * k / 4
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11" fill="#333">{step * k}</text>')
    for i, day in enumerate(dates):
        x = left + i * bar_w
        y = top + plot_h
        for c, (name, values) in enumerate(series.items()):
            if values[i]:
                h = plot_h * values[i] / peak
                y -= h
                out.append(f'<rect x="{x + 1:.1f}" y="{y:.1f}" width="{max(bar_w - 2, 1):.1f}" height="{h:.1f}" '
                           f'fill="{PALETTE[c % len(PALETTE)]}"><title>{day.isoformat()} {escape(name)}: '
                           f'{values[i]}</title></rect>')
        if len(dates) <= 14 or i % max(1, len(dates) // 8) == 0:
            out.append(f'<text x="{x + bar_w / 2:.1f}" y="{top + plot_h + 16}" text-anchor="middle" '
                       f'font-size="11" fill="#333">{day.strftime("%m-%d")}</text>')
    for c, name in enumerate(series):
        lx, ly = left + (c % 3) * (plot_w / 3), height + (c // 3) * 20
        out.append(f'<rect x="{lx:.1f}" y="{ly}" width="12" height="12" fill="{PALETTE[c % len(PALETTE)]}"/>')
        out.append(f'<text x="{lx + 18:.1f}" y="{ly + 11}" font-size="12" fill="#111">'
                   f'{escape(name)} ({sum(series[name])})</text>')
    out.append("</svg>")
    return "\n".join(out)
