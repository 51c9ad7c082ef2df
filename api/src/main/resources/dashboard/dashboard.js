// fairq dashboards: plain JS, no dependencies, no build step. The page is static; the data comes from
// /v1/dashboard (tenant key) or /v1/admin/overview (admin token), refreshed every few seconds. Everything
// shown is set with textContent (never innerHTML), so a job's type or error text cannot inject markup.
(function () {
  'use strict';
  var page = document.body.getAttribute('data-page');
  var STORE = page === 'admin' ? 'fairq.adminToken' : 'fairq.tenantKey';
  // a 429's Retry-After is honoured up to MAX_BACKOFF_MS: longer (a proxy's hour) would leave the figures frozen
  var REFRESH_MS = 3000, REQUEST_TIMEOUT_MS = 10000, MAX_BACKOFF_MS = 60000;
  var timer = null;
  var SVG = 'http://www.w3.org/2000/svg';

  function $(id) { return document.getElementById(id); }
  // a role="alert" line is announced again at each write, the same words too: one failing refresh every 3 s was
  // read out every 3 s, so a line is written only when what it says changes
  function say(id, text) { if ($(id).textContent !== text) $(id).textContent = text; }
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    if (attrs) Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function svg(tag, attrs) {
    var e = document.createElementNS(SVG, tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    return e;
  }
  function token() { return sessionStorage.getItem(STORE); }

  function api(method, path, body, signal) {
    var headers = { 'Authorization': 'Bearer ' + token() };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    return fetch(path, { method: method, headers: headers, body: body === undefined ? undefined : JSON.stringify(body),
                         cache: 'no-store', signal: signal })
      .then(function (r) {
        return r.text().then(function (t) {
          var data = null, json = true;
          try { data = t ? JSON.parse(t) : null; } catch (e) { json = false; }
          if (!r.ok || !json) {
            // fairq's errors are JSON with an "error"; anything else (a proxy's HTML page, which had been shown
            // whole in the error line) is named by its status alone
            var fairq = json && data && typeof data.error === 'string';
            var err = new Error(fairq ? data.error : 'HTTP ' + r.status + (r.statusText ? ' ' + r.statusText : '')
              + (json ? '' : ': the answer is not from fairq (a proxy in between?)'));
            err.status = r.status;
            err.retryAfterMs = retryAfterMs(r);
            throw err;
          }
          return data;
        });
      });
  }

  // Retry-After in seconds or as an HTTP date (RFC 9110), in ms from now; null when absent or unreadable
  function retryAfterMs(r) {
    var v = r.headers.get('Retry-After');
    if (!v || (r.status !== 429 && r.status !== 503)) return null;
    var ms = /^\s*\d+\s*$/.test(v) ? parseInt(v, 10) * 1000 : Date.parse(v) - Date.now();
    return isNaN(ms) ? null : Math.max(0, ms);
  }

  // ---- formatting ----
  function age(ms) {
    if (ms === null || ms === undefined) return '–';
    var s = Math.round(ms / 1000);
    if (s < 60) return s + ' s';
    if (s < 3600) return Math.floor(s / 60) + ' min ' + (s % 60) + ' s';
    return Math.floor(s / 3600) + ' h ' + Math.floor((s % 3600) / 60) + ' min';
  }
  function pct(x) { return x === null || x === undefined ? '–' : (x * 100).toFixed(x < 0.1 && x > 0 ? 1 : 0) + '%'; }
  // two decimals, but a small non-zero value keeps two significant digits (a rate of 0.0005/s is not 0)
  function num(x) {
    if (x === null || x === undefined) return '–';
    if (x !== 0 && Math.abs(x) < 0.01) return String(Number(x.toPrecision(2)));
    return (Math.round(x * 100) / 100).toLocaleString('en');
  }
  function time(iso) { return iso ? new Date(iso).toLocaleTimeString() : '–'; }
  // the hour and minute in the browser's own format ("6:21 PM", "18:21"): the first five characters of the time
  // had been "6:21:" in a 12-hour locale, with no AM or PM
  function hourMinute(iso) { return new Date(iso).toLocaleTimeString([], { hour: 'numeric', minute: '2-digit' }); }
  function statusPill(s) { return el('span', { 'class': 'st st-' + s, 'data-status': s }, s); }

  // A redraw (every 3 s) replaced the row button a keyboard user was on, and the focus fell to the page's start:
  // the same button of the new rows (its class and its row's tenant or job) takes it back.
  function buttonKey(b) { return b.className + '|' + (b.getAttribute('data-tenant') || b.getAttribute('data-id')); }
  function fillTable(table, rows, cols, emptyText) {
    var tbody = table.querySelector('tbody'), a = document.activeElement;
    var focused = a && a.tagName === 'BUTTON' && tbody.contains(a) ? buttonKey(a) : null;
    fillRows(tbody, table, rows, cols, emptyText);
    if (!focused) return;
    var again = Array.prototype.find.call(tbody.querySelectorAll('button'), function (b) { return buttonKey(b) === focused; });
    if (again) again.focus();
  }
  function fillRows(tbody, table, rows, cols, emptyText) {
    tbody.textContent = '';
    if (!rows.length) {
      var tr = el('tr');
      tr.appendChild(el('td', { 'class': 'empty', colspan: String(table.querySelectorAll('th').length) }, emptyText));
      tbody.appendChild(tr);
      return;
    }
    rows.forEach(function (row) {
      var tr = el('tr');
      if (row.id !== undefined) tr.setAttribute('data-job-id', String(row.id));
      cols.forEach(function (c) {
        var v = c(row, tr);
        var td = el('td');
        if (v instanceof Node) td.appendChild(v); else td.textContent = v === null || v === undefined ? '–' : String(v);
        if (c.cls) td.className = c.cls;
        tr.appendChild(td);
      });
      tbody.appendChild(tr);
    });
  }
  function col(f, cls) { f.cls = cls; return f; }

  // ---- charts: inline SVG lines, a gap where a value is unknown (null) ----
  function lineChart(container, points, series) {
    container.textContent = '';
    var W = 600, H = 180, L = 34, R = 8, T = 8, B = 20;
    var max = 0;
    points.forEach(function (p) { series.forEach(function (s) { if (p[s.key] !== null && p[s.key] > max) max = p[s.key]; }); });
    max = niceMax(max);
    // an image needs a name: the panel's title and the latest values (the legend's words)
    var title = container.parentNode.querySelector('h2');
    var named = series.map(function (s) { var v = points.length ? points[points.length - 1][s.key] : null;
      return s.label + ' ' + (v === null || v === undefined ? 'unknown' : v); }).join(', ');
    var root = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, preserveAspectRatio: 'none', role: 'img',
                            'aria-label': (title ? title.textContent + ': ' : '') + named + ' this minute' });
    var x = function (i) { return L + (W - L - R) * (points.length <= 1 ? 0 : i / (points.length - 1)); };
    var y = function (v) { return T + (H - T - B) * (1 - v / max); };
    [0, 0.5, 1].forEach(function (f) {
      root.appendChild(svg('line', { 'class': 'axis', x1: L, x2: W - R, y1: y(max * f), y2: y(max * f) }));
      var t = svg('text', { x: 2, y: y(max * f) + 3 }); t.textContent = num(Math.round(max * f)); root.appendChild(t);
    });
    [0, Math.floor(points.length / 2), points.length - 1].forEach(function (i) {
      if (!points[i]) return;
      var t = svg('text', { x: Math.min(x(i) - 14, W - 40), y: H - 4 }); t.textContent = hourMinute(points[i].minute); root.appendChild(t);
    });
    series.forEach(function (s) {
      var d = '', pen = false;
      points.forEach(function (p, i) {
        var v = p[s.key];
        if (v === null || v === undefined) { pen = false; return; }
        d += (pen ? 'L' : 'M') + x(i).toFixed(1) + ' ' + y(v).toFixed(1) + ' ';
        pen = true;
      });
      if (d) root.appendChild(svg('path', { d: d, fill: 'none', stroke: s.color, 'stroke-width': 2, 'data-series': s.key }));
      // a dot on the latest known value, so a single point (a fresh start, a gap before it) is visible too
      for (var i = points.length - 1; i >= 0; i--) {
        var v = points[i][s.key];
        if (v === null || v === undefined) continue;
        root.appendChild(svg('circle', { cx: x(i).toFixed(1), cy: y(v).toFixed(1), r: 3, fill: s.color }));
        break;
      }
    });
    container.appendChild(root);
    var legend = el('div', { 'class': 'legend' });
    series.forEach(function (s) {
      var last = points.length ? points[points.length - 1][s.key] : null;
      var span = el('span'); var i = el('i'); i.style.background = s.color; span.appendChild(i);
      span.appendChild(document.createTextNode(s.label + (last === null || last === undefined ? '' : ' (' + last + ' this min)')));
      legend.appendChild(span);
    });
    container.appendChild(legend);
  }

  // 4, 10, 20, 50, 100, ...: a round top for the y axis whose half is a whole number too
  function niceMax(m) {
    if (m <= 4) return 4;
    var p = Math.pow(10, Math.floor(Math.log10(m)));
    var steps = [1, 2, 5, 10];
    for (var i = 0; i < steps.length; i++) if (steps[i] * p >= m) return steps[i] * p;
    return 10 * p;
  }

  function meter(label, used, limit, fmt) {
    var box = el('div', { 'class': 'meter' });
    var head = el('div', { 'class': 'label' });
    head.appendChild(el('span', null, label));
    head.appendChild(el('strong', null, fmt(used) + ' / ' + fmt(limit)));
    box.appendChild(head);
    var f = limit > 0 ? Math.min(1, used / limit) : 0;
    var bar = el('div', { 'class': 'bar' + (f >= 0.9 ? ' bad' : f >= 0.7 ? ' warn' : '') });
    var fill = el('div'); fill.style.width = (f * 100).toFixed(1) + '%'; bar.appendChild(fill);
    box.appendChild(bar);
    return box;
  }

  function card(label, value, cls, id) {
    var c = el('div', { 'class': 'card' + (cls ? ' ' + cls : ''), id: id });
    c.appendChild(el('div', { 'class': 'v' }, value));
    c.appendChild(el('div', { 'class': 'k' }, label));
    return c;
  }

  // ---- the tenant page ----
  function renderTenant(d, recent) {
    $('who').textContent = d.tenant;
    var c = d.counts, cards = $('cards');
    cards.textContent = '';
    cards.appendChild(card('pending', num(c.pending), null, 'count-pending'));
    cards.appendChild(card('ready', num(c.ready), null, 'count-ready'));
    cards.appendChild(card('running', num(c.running), null, 'count-running'));
    cards.appendChild(card('dead (dead-letter queue)', num(c.dead), c.dead > 0 ? 'bad' : null, 'count-dead'));
    cards.appendChild(card('oldest pending', age(d.oldest_pending_age_ms), d.oldest_pending_age_ms > 60000 ? 'warn' : null, 'oldest'));
    cards.appendChild(card('succeeded, last hour', num(c.succeeded_last_hour), null, 'count-succeeded'));
    cards.appendChild(card('success rate, last hour', pct(d.success_rate), null, 'success-rate'));
    cards.appendChild(card('failure rate, last hour', pct(d.failure_rate), d.failure_rate > 0.1 ? 'warn' : null, 'failure-rate'));

    lineChart($('chart-depth'), d.series, [
      { key: 'pending', label: 'pending', color: '#8a94a8' },
      { key: 'ready', label: 'ready', color: '#3b82f6' },
      { key: 'running', label: 'running', color: '#10b981' }]);
    lineChart($('chart-throughput'), d.series, [
      { key: 'started', label: 'started', color: '#3b82f6' },
      { key: 'succeeded', label: 'succeeded', color: '#10b981' },
      { key: 'failed', label: 'failed (retried)', color: '#f59e0b' },
      { key: 'dead', label: 'dead', color: '#dc2626' }]);

    var lim = $('limits'); lim.textContent = '';
    lim.appendChild(meter('running vs max_running', d.usage.running, d.limits.max_running, num));
    lim.appendChild(meter('starts/s (last minute) vs rate_per_second', d.usage.start_rate_per_second, d.limits.rate_per_second, num));
    lim.appendChild(meter('queued vs max_queued', d.usage.queued, d.limits.max_queued, num));
    if (d.limits.paused) lim.appendChild(el('p', { 'class': 'error' }, 'This tenant is paused: nothing starts.'));

    fillTable($('running'), d.running_jobs, [
      function (r) { return r.id; }, function (r) { return r.type; }, function (r) { return r.queue; },
      function (r) { return r.attempt + ' of ' + r.max_attempts; }, function (r) { return r.ordering_key; },
      function (r) { return age(r.age_ms); }], 'nothing running');
    fillTable($('recent'), recent, [
      function (r) { return r.id; }, function (r) { return r.type; },
      function (r, tr) { tr.setAttribute('data-status', r.status); return statusPill(r.status); },
      function (r) { return r.attempts; }, function (r) { return time(r.created_at); }], 'no jobs yet');
    fillTable($('dead'), d.dead_letters, [
      function (r) { return r.id; }, function (r) { return r.type; }, function (r) { return r.queue; },
      function (r) { return r.attempts; }, function (r) { return time(r.finished_at); },
      col(function (r) { return r.last_error; }, 'err'),
      function (r) {
        // a name of its own: a screen reader's list of buttons had fifty times "Replay"
        var b = el('button', { 'class': 'replay', 'data-id': String(r.id), type: 'button', 'aria-label': 'Replay job ' + r.id }, 'Replay');
        b.addEventListener('click', function () { replay(r.id, b); });
        return b;
      }], 'the dead-letter queue is empty');
    fillTable($('keys'), d.top_keys || [], [
      function (r) { return r.key; }, function (r) { return r.kind; }, function (r) { return r.running; },
      function (r) { return r.admitted; },
      function (r) { return r.kind === 'concurrency' ? (r.limit === null ? 'unlimited' : 'limit ' + r.limit) : 'weight ' + r.weight; }],
      'no concurrency or fairness key has jobs running');
    fillTable($('blocked'), d.blocked_keys, [
      function (r) { return r.ordering_key; }, function (r) { return '#' + r.dead_job_id; },
      function (r) { return time(r.dead_since); }, function (r) { return r.waiting; },
      col(function (r) { return r.last_error; }, 'err')], 'no ordering key is blocked');
    // the lists hold the first 50: say so when the count above is larger (a dead-letter queue of 120 had shown 50
    // rows and no word of the other 70)
    more('running-more', d.running_jobs.length, c.running, 'running jobs', 'the longest running', 'status=running');
    more('dead-more', d.dead_letters.length, c.dead, 'dead jobs', 'the newest', 'status=dead');
    more('blocked-more', d.blocked_keys.length, d.blocked_ordering_keys, 'blocked keys', 'the first', null);
    fillTable($('schedules'), d.schedules || [], [
      function (r) { return r.name; }, function (r) { return r.cron; }, function (r) { return r.time_zone; },
      function (r) { return r.paused ? 'paused' : (r.next_fires.length ? dateTime(r.next_fires[0]) : 'none (ended)'); },
      function (r) { return r.last_fire ? dateTime(r.last_fire.fire_at) + (r.last_fire.outcome === 'enqueued' ? '' : ' (' + r.last_fire.outcome + ')') : '–'; },
      function (r, tr) {
        var f = r.last_fire;
        if (!f || !f.job_id) return '–';
        if (!f.job_status) return '#' + f.job_id + ' (gone after retention)';
        tr.setAttribute('data-status', f.job_status);
        var span = el('span', null, '#' + f.job_id + ' ');
        span.appendChild(statusPill(f.job_status));
        return span;
      }], 'no schedules: create one with PUT /v1/schedules/{name}');
  }
  function more(id, shown, total, what, which, filter) {
    $(id).textContent = total > shown ? which + ' ' + shown + ' of ' + num(total) + ' ' + what
      + (filter ? ' (all of them: GET /v1/jobs?' + filter + ')' : '') : '';
  }
  function dateTime(iso) { return iso ? new Date(iso).toLocaleString() : '–'; }

  function replay(id, button) {
    button.disabled = true;
    api('POST', '/v1/jobs/' + encodeURIComponent(id) + '/retry')
      .then(function (job) { $('error').textContent = ''; flash('job ' + job.id + ' replayed: ' + job.status); refreshNow(); })
      .catch(function (e) { button.disabled = false; $('error').textContent = 'replay of job ' + id + ' failed: ' + e.message; });
  }
  // its own line: written to #updated, the refresh it triggers overwrote it within milliseconds, unread
  function flash(msg) { $('notice').textContent = msg; }

  // ---- the admin page ----
  var lastOverview = null;
  function renderAdmin(o, signal) {
    var pg0 = o.page;
    // the active set shrank under an open page (tenants went idle): show its last page, not "51-50 of 30"
    if (o.tenants.length === 0 && pg0.offset > 0) {
      var last = pg0.total === 0 ? 0 : Math.floor((pg0.total - 1) / overview.limit) * overview.limit;
      overview.offset = last < pg0.offset ? last : 0; // always lower, so this ends
      return api('GET', overviewPath(), undefined, signal).then(drawn(signal, renderAdmin));
    }
    lastOverview = o;
    $('share-note').textContent = 'Worker share: ' + (o.worker_share_basis === 'worker_time' ? 'worker time' : 'attempts started')
      + ' over the last ' + o.share_window_minutes + ' min, against the tenant\'s share of the weights of the active tenants. '
      + 'Red rows take more than 1.5x their weight share, and over 10% of the workers, while others are active too. Counts: last '
      + o.window_minutes + ' min.';
    var t = o.totals, pg = o.page;
    $('totals').textContent = num(t.active_tenants) + ' active of ' + num(t.registered_tenants) + ' tenants · '
      + num(t.over_share_tenants) + ' over their share · ' + num(t.pending) + ' pending, ' + num(t.ready) + ' ready, '
      + num(t.running) + ' running · ' + num(t.started_last_5m) + ' starts in ' + o.share_window_minutes + ' min';
    // not "active": the list also holds paused tenants with waiting jobs, which the totals do not count as active
    // ("1-50 of 8572 active" beside "8,571 active")
    $('page-info').textContent = pg.total === 0 ? '' : num(pg.offset + 1) + '-' + num(pg.offset + o.tenants.length) + ' of '
      + num(pg.total) + (pg.search ? ' matching "' + pg.search + '"' : ' listed');
    $('page-prev').disabled = pg.offset === 0;
    $('page-next').disabled = pg.next_offset === null;
    // the server sorts (over their share first, then by backlog) and pages: the page is shown as it comes
    fillTable($('tenants'), o.tenants, [
      function (t, tr) {
        tr.setAttribute('data-tenant', t.tenant);
        if (t.over_share) tr.className = 'noisy';
        var name = el('span');
        name.appendChild(el('span', null, t.tenant));
        if (t.over_share) name.appendChild(el('span', { 'class': 'badge' }, 'over its share'));
        // both marks: the flooder just paused stays over its share for the window's five minutes, and the badge had
        // taken the place of the pause's mark, as if the pause had not taken
        if (t.limits.paused) name.appendChild(el('span', { 'class': 'muted' }, ' (paused)'));
        return name;
      },
      function (t) {
        var box = el('div', { 'class': 'share' });
        box.appendChild(el('span', null, 'workers ' + pct(t.worker_share) + ' · weight ' + pct(t.weight_share) + ' (w=' + t.limits.weight + ')'));
        var b1 = el('div', { 'class': 'bar' + (t.over_share ? ' bad' : '') }); var f1 = el('div'); f1.style.width = ((t.worker_share || 0) * 100) + '%'; b1.appendChild(f1);
        var b2 = el('div', { 'class': 'bar w' }); var f2 = el('div'); f2.style.width = ((t.weight_share || 0) * 100) + '%'; b2.appendChild(f2);
        box.appendChild(b1); box.appendChild(b2);
        return box;
      },
      function (t) { return num(t.counts.pending); }, function (t) { return num(t.counts.ready); },
      function (t, tr) {
        var s = el('span', null, num(t.usage.running) + ' / ' + num(t.limits.max_running));
        if (t.usage.running > t.limits.max_running) { s.className = 'over'; s.title = 'above max_running: the limit was just lowered; it drains'; }
        return s;
      },
      function (t) { return num(t.usage.start_rate_per_second) + ' / ' + num(t.limits.rate_per_second); },
      function (t) { return num(t.usage.queued) + ' / ' + num(t.limits.max_queued); },
      function (t) { return age(t.oldest_pending_age_ms); },
      function (t) { return num(t.counts.succeeded_last_hour); },
      function (t) { return num(t.counts.failed_last_hour); },
      function (t) { return num(t.counts.dead_last_hour) + ' / ' + num(t.counts.dead); },
      function (t) { return pct(t.success_rate); },
      function (t) { return num(t.blocked_ordering_keys); },
      function (t) {
        var b = el('button', { type: 'button', 'class': 'edit-limits', 'data-tenant': t.tenant, 'aria-label': 'Edit limits of ' + t.tenant }, 'Edit limits');
        b.addEventListener('click', function () { openEdit(t); });
        return b;
      }], overview.search ? 'no tenant id starts with "' + overview.search + '"'
        : 'no active tenant in the last ' + o.share_window_minutes + ' min (search finds idle ones)');
  }

  // what the admin page shows: one page of the overview, optionally a search by tenant id prefix
  var overview = { offset: 0, limit: 50, search: '' };
  function overviewPath() {
    var q = '?offset=' + overview.offset + '&limit=' + overview.limit;
    if (overview.search) q += '&search=' + encodeURIComponent(overview.search);
    return '/v1/admin/overview' + q;
  }

  var editing = null;
  function openEdit(t) {
    editing = t;
    $('edit-tenant').textContent = t.tenant;
    var f = $('edit-form');
    fillEdit(t.limits);
    $('edit-result').textContent = '';
    $('edit-panel').hidden = false;
    // the form is under the table: a keyboard user had to tab past every row's buttons to reach it
    f.elements.weight.focus();
  }
  function fillEdit(limits) {
    var f = $('edit-form');
    ['weight', 'max_running', 'rate_per_second', 'burst', 'max_queued'].forEach(function (k) { f.elements[k].value = limits[k]; });
    f.elements.paused.checked = !!limits.paused;
  }
  function closeEdit() {
    var tenant = editing && editing.tenant;
    $('edit-panel').hidden = true; editing = null;
    // back to the row it was opened from (redrawn since: found again by its tenant)
    var b = tenant && document.querySelector('button.edit-limits[data-tenant="' + CSS.escape(tenant) + '"]');
    if (b) b.focus();
  }
  function saveEdit(ev) {
    ev.preventDefault();
    if (!editing) return;
    var f = $('edit-form'), patch = {};
    ['weight', 'max_running', 'burst', 'max_queued'].forEach(function (k) {
      var v = Number(f.elements[k].value); if (v !== editing.limits[k]) patch[k] = v;
    });
    var rate = Number(f.elements.rate_per_second.value);
    if (rate !== editing.limits.rate_per_second) patch.rate_per_second = rate;
    if (f.elements.paused.checked !== !!editing.limits.paused) patch.paused = f.elements.paused.checked;
    if (!Object.keys(patch).length) { $('edit-result').textContent = 'nothing changed'; return; }
    api('PATCH', '/v1/admin/tenants/' + encodeURIComponent(editing.tenant), patch)
      // the form shows the tenant as stored, changes made elsewhere since it opened included: it kept what it was
      // opened with, and the next save sent those old values back (a pause made elsewhere undone by a change of weight)
      .then(function (t) {
        $('edit-result').textContent = 'saved: ' + JSON.stringify(patch);
        if (editing && editing.tenant === t.id) { editing.limits = t; fillEdit(t); }
        refreshNow();
      })
      .catch(function (e) { $('edit-result').textContent = 'not saved: ' + e.message; });
  }

  // ---- refresh loop and sign-in ----
  // An answer is drawn only while its refresh is the current one: a sign-out, or a newer refresh (a search, a
  // page, a replay), aborts the one in flight, so a late answer can neither show the previous key's tenant nor
  // overwrite a newer page, and a slow server never has more than one refresh of this tab to answer.
  var inflight = null;
  function drawn(signal, render) {
    return function (data) { if (!signal.aborted) return render(data, signal); };
  }
  function load(signal) {
    if (page === 'admin') return api('GET', overviewPath(), undefined, signal).then(drawn(signal, renderAdmin));
    return api('GET', '/v1/dashboard', undefined, signal).then(drawn(signal, function (d) { renderTenant(d, d.recent_jobs); }));
  }
  function refresh() {
    timer = null;
    if (inflight) inflight.abort();
    inflight = null;
    if (!token()) return;
    var mine = inflight = new AbortController();
    // a server that never answers (stopped, or a proxy holding the connection) must not freeze the figures
    // without a word: the refresh gives up after REQUEST_TIMEOUT_MS, says so, and the next one is scheduled
    var timeout = setTimeout(function () { mine.timedOut = true; mine.abort(); }, REQUEST_TIMEOUT_MS);
    var next = REFRESH_MS;
    load(mine.signal).then(function () {
      if (inflight !== mine) return;
      say('error', '');
      $('updated').textContent = 'updated ' + new Date().toLocaleTimeString() + ' · every ' + (REFRESH_MS / 1000) + ' s';
    }).catch(function (e) {
      if (mine.timedOut) e = new Error('no answer within ' + (REQUEST_TIMEOUT_MS / 1000) + ' s');
      else if (inflight !== mine) return; // superseded or signed out: not this session's answer
      if (e.status === 401 || e.status === 403) { signOut(e.message); return; }
      // a 429 (the tenant's API limit spent) says when a request will be let in: asking every 3 s before then
      // is refused again and adds to the load the limit is there to stop
      if (e.retryAfterMs !== null && e.retryAfterMs !== undefined && e.retryAfterMs > REFRESH_MS) {
        next = Math.min(e.retryAfterMs, MAX_BACKOFF_MS);
      }
      say('error', 'could not refresh: ' + e.message
        + (next > REFRESH_MS ? ' (next try in ' + Math.round(next / 1000) + ' s)' : ''));
      if (page === 'admin' && e.status === 422) {
        // a search that no tenant id can start with ("acme corp"): the previous search's rows are not its answer
        fillTable($('tenants'), [], [], 'no tenant id can start with "' + overview.search + '"');
        $('page-info').textContent = '';
        $('page-prev').disabled = true; $('page-next').disabled = true;
        lastOverview = null;
      }
    }).then(function () {
      clearTimeout(timeout);
      if (inflight !== mine) return;
      inflight = null;
      if (token() && !timer) timer = setTimeout(refresh, next);
    });
  }
  function refreshNow() { if (timer) { clearTimeout(timer); timer = null; } refresh(); }

  function show(signedIn) {
    $('signin-box').hidden = signedIn;
    $('dash').hidden = !signedIn;
    $('signout').hidden = !signedIn;
  }
  function signOut(reason) {
    sessionStorage.removeItem(STORE);
    if (timer) { clearTimeout(timer); timer = null; }
    if (inflight) { inflight.abort(); inflight = null; }
    clearFigures();
    show(false);
    $('signin-error').textContent = reason || '';
    $('updated').textContent = '';
  }
  // what the signed-out key saw goes with it: hidden is not gone (the next person at this tab, its developer tools)
  function clearFigures() {
    ['who', 'error', 'cards', 'chart-depth', 'chart-throughput', 'limits', 'totals', 'share-note', 'page-info',
      'edit-tenant', 'edit-result', 'running-more', 'dead-more', 'blocked-more', 'notice']
      .forEach(function (id) { if ($(id)) $(id).textContent = ''; });
    Array.prototype.forEach.call(document.querySelectorAll('#dash tbody'), function (b) { b.textContent = ''; });
    if (page === 'admin') {
      $('edit-panel').hidden = true; editing = null; lastOverview = null;
      overview.offset = 0; overview.search = ''; $('search').value = '';
    }
  }
  function signIn(ev) {
    ev.preventDefault();
    var k = $('key').value.trim();
    if (!k) { $('signin-error').textContent = 'paste a key first'; return; }
    // a character a browser cannot send in a header (a '…' or a curly quote copied from a document) made every
    // refresh fail with the browser's own words, on an empty page that looked signed in
    var bad = k.match(/[\u0000-\u001f\u007f\u0100-\uffff]/);
    if (bad) {
      $('signin-error').textContent = 'no key has the character "' + bad[0] + '" (U+'
        + ('000' + bad[0].charCodeAt(0).toString(16).toUpperCase()).slice(-4) + '): copy it again from where it was shown';
      return;
    }
    sessionStorage.setItem(STORE, k);
    $('key').value = '';
    $('signin-error').textContent = '';
    show(true);
    refreshNow();
  }

  $('signin-form').addEventListener('submit', signIn);
  $('signout').addEventListener('click', function () { signOut(''); });
  if (page === 'admin') {
    $('search-form').addEventListener('submit', function (ev) {
      ev.preventDefault();
      overview.search = $('search').value.trim().toLowerCase();
      overview.offset = 0;
      refreshNow();
    });
    $('page-prev').addEventListener('click', function () { overview.offset = Math.max(0, overview.offset - overview.limit); refreshNow(); });
    $('page-next').addEventListener('click', function () {
      if (lastOverview && lastOverview.page.next_offset !== null) { overview.offset = lastOverview.page.next_offset; refreshNow(); }
    });
    $('edit-form').addEventListener('submit', saveEdit);
    $('edit-cancel').addEventListener('click', closeEdit);
  }
  show(!!token());
  if (token()) refresh();
})();
