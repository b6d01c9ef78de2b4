// The replay page's script (Rigid Workbench, workbench/web/page.py writes the data it reads).
//
// DATA (the JSON in #wb-data): title, caption, camera (eye, target, fov, near, far; z up), frame
// (lo, hi: the box the camera is fitted to at the canvas's own aspect, or null for a camera the
// user set), fill (the share of the canvas's half-width or half-height the box reaches), bounds (centre,
// radius) of what moves, worlds (per body the parts drawn in its body frame: kind, size, colour
// sRGB, offset, rotation, mesh index), meshes (float32 vertices, uint32 faces, base64), runs
// (label, world, times float64, first pose of every body (n x 7: origin xyz, quaternion xyzw),
// moving and turning body indices, their origins (nk x moving x 3) and quaternions
// (nk x turning x 4), float32 base64). Poses are of body frames, not of centres of mass.
//
// URL hash: #t=0.5&run=1&paused&speed=2&reverse&ui=0. window.workbench: ready, seek(t),
// setRun(i), play(), pause(), state().
(function () {
  "use strict";

  const api = (window.workbench = { ready: false });
  const LOOP_PAUSE = 0.5; // s of wall time shown at the end before a loop starts again
  const MAX_WALL_STEP = 0.1; // s: a longer gap between animation frames (a hidden tab) is not played
  const SPEEDS = [0.05, 0.1, 0.25, 0.5, 1, 2, 4, 10];
  const MANY = 500; // instances from which spheres are drawn with fewer triangles

  function fail(err) {
    const box = document.getElementById("error");
    box.textContent = "cannot show the replay: " + (err && err.message ? err.message : err);
    box.style.display = "block";
    throw err;
  }

  function bytes(b64) {
    const s = atob(b64);
    const u = new Uint8Array(s.length);
    for (let i = 0; i < s.length; i++) u[i] = s.charCodeAt(i);
    return u.buffer;
  }

  function parseHash() {
    const out = {};
    for (const item of window.location.hash.replace(/^#/, "").split("&")) {
      if (!item) continue;
      const [k, v] = item.split("=");
      out[decodeURIComponent(k)] = v === undefined ? true : decodeURIComponent(v);
    }
    return out;
  }

  function srgb(c) {
    return new THREE.Color().setRGB(c[0], c[1], c[2], THREE.SRGBColorSpace);
  }

  let DATA;
  try {
    DATA = JSON.parse(document.getElementById("wb-data").textContent);
  } catch (err) {
    fail(err);
  }
  const hash = parseHash();
  if (hash.ui === "0") document.body.classList.add("noui");
  document.getElementById("title").textContent = DATA.title;
  document.getElementById("caption").textContent = DATA.caption || "";
  document.getElementById("caption").title = DATA.caption || ""; // whole, when cut short

  // ---------------------------------------------------------------- renderer, camera, lights
  // the canvas fills #view, the space the panels above and below leave
  const view = document.getElementById("view");
  const viewSize = () => [Math.max(1, view.clientWidth), Math.max(1, view.clientHeight)];
  const renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
  renderer.setPixelRatio(window.devicePixelRatio || 1);
  renderer.setSize(...viewSize());
  renderer.shadowMap.enabled = true;
  renderer.shadowMap.type = THREE.PCFShadowMap; // soft PCF was removed in r18x
  view.appendChild(renderer.domElement);

  const scene = new THREE.Scene();
  scene.background = srgb([0.93, 0.94, 0.955]);

  const C = DATA.camera;
  const [w0, h0] = viewSize();
  const camera = new THREE.PerspectiveCamera(C.fov, w0 / h0, C.near, C.far);
  camera.up.set(0, 0, 1); // z up; the view equals PyBullet's (its up() is z tilted by the pitch)
  camera.position.fromArray(C.eye);
  const controls = new THREE.OrbitControls(camera, renderer.domElement);
  controls.target.fromArray(C.target);
  camera.lookAt(controls.target);
  controls.update();

  // The camera the page starts from, fitted to the canvas as it is (workbench/replay/framing.py
  // _fit_box, the same rule): from the view of DATA.camera, the nearest distance at which the
  // 8 corners of DATA.frame project within DATA.fill of the half-width and half-height, the
  // projected box centred. Refitted when the canvas changes size, until the user moves the camera.
  let userMoved = false;
  function fitCamera() {
    if (!DATA.frame || userMoved) return;
    const lo = DATA.frame.lo, hi = DATA.frame.hi;
    const corners = [];
    for (const x of [lo[0], hi[0]]) for (const y of [lo[1], hi[1]]) for (const z of [lo[2], hi[2]]) corners.push(new THREE.Vector3(x, y, z));
    const back = new THREE.Vector3().fromArray(C.eye).sub(new THREE.Vector3().fromArray(C.target)).normalize();
    const right = new THREE.Vector3(0, 0, 1).cross(back).normalize();
    const up = back.clone().cross(right);
    const tanV = Math.tan((C.fov * Math.PI) / 360);
    const limX = DATA.fill * tanV * camera.aspect, limY = DATA.fill * tanV;
    const target = new THREE.Vector3().fromArray(lo).add(new THREE.Vector3().fromArray(hi)).multiplyScalar(0.5);
    const rel = new THREE.Vector3();
    let d = 0;
    for (let round = 0; round <= 4; round++) {
      d = -Infinity;
      for (const c of corners) {
        rel.copy(c).sub(target);
        d = Math.max(d, rel.dot(back) + Math.max(Math.abs(rel.dot(right)) / limX, Math.abs(rel.dot(up)) / limY));
      }
      if (round === 4) break;
      let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
      for (const c of corners) { // image units: -1..1 across the half-width and half-height
        rel.copy(c).sub(target);
        const depth = d - rel.dot(back);
        const x = rel.dot(right) / (depth * tanV * camera.aspect), y = rel.dot(up) / (depth * tanV);
        x0 = Math.min(x0, x); x1 = Math.max(x1, x); y0 = Math.min(y0, y); y1 = Math.max(y1, y);
      }
      target.addScaledVector(right, (d * tanV * camera.aspect * (x0 + x1)) / 2);
      target.addScaledVector(up, (d * tanV * (y0 + y1)) / 2);
    }
    controls.target.copy(target);
    camera.position.copy(target).addScaledVector(back, d);
    camera.near = d / 100;
    camera.far = d * 100;
    camera.lookAt(target);
    camera.updateProjectionMatrix();
    controls.update();
  }
  fitCamera();

  const centre = new THREE.Vector3().fromArray(DATA.bounds.centre);
  const R = DATA.bounds.radius;
  scene.add(new THREE.HemisphereLight(0xffffff, 0x9a9a9a, 1.7));
  const sun = new THREE.DirectionalLight(0xffffff, 2.0);
  sun.position.copy(centre).add(new THREE.Vector3(0.35, -0.55, 1).normalize().multiplyScalar(4 * R));
  sun.target.position.copy(centre);
  sun.castShadow = true;
  sun.shadow.mapSize.set(2048, 2048);
  const sc = sun.shadow.camera; // fitted to the bounds of what moves
  sc.left = sc.bottom = -2.5 * R;
  sc.right = sc.top = 2.5 * R;
  sc.near = 1.0 * R;
  sc.far = 8 * R;
  sc.updateProjectionMatrix();
  sun.shadow.normalBias = (2 * 5 * R) / 2048; // two shadow-map texels
  scene.add(sun, sun.target);

  // ---------------------------------------------------------------- shapes
  const meshGeometries = DATA.meshes.map(function (m) {
    const g = new THREE.BufferGeometry();
    g.setAttribute("position", new THREE.BufferAttribute(new Float32Array(bytes(m.vertices)), 3));
    g.setIndex(new THREE.BufferAttribute(new Uint32Array(bytes(m.faces)), 1));
    const flat = g.toNonIndexed(); // flat faces, as PyBullet draws a mesh without normals
    flat.computeVertexNormals();
    return flat;
  });

  // geometry key, scale (3,) and a builder for each part kind; unit solids are scaled
  function partShape(part) {
    const s = part.size;
    switch (part.kind) {
      case "sphere":
        return { key: "sphere", scale: [s[0], s[0], s[0]], make: (n) =>
          n > MANY ? new THREE.SphereGeometry(1, 14, 10) : new THREE.SphereGeometry(1, 40, 28) };
      case "box":
        return { key: "box", scale: s, make: () => new THREE.BoxGeometry(1, 1, 1) };
      case "cylinder": // three.js cylinders are along y; the scene's along z
        return { key: "cylinder", scale: [s[0], s[0], s[1]], make: () =>
          new THREE.CylinderGeometry(1, 1, 1, 40).rotateX(Math.PI / 2) };
      case "capsule": // hemispheres do not scale: one geometry per size
        return { key: "capsule:" + s[0] + ":" + s[1], scale: [1, 1, 1], make: () =>
          new THREE.CapsuleGeometry(s[0], s[1], 12, 32).rotateX(Math.PI / 2) };
      case "plane": // a slab 2 mm thick whose top face is the plane (the part's offset)
        return { key: "plane", scale: [s[0], s[1], 0.002], make: () => new THREE.BoxGeometry(1, 1, 1) };
      case "mesh":
        return { key: "mesh:" + part.mesh, scale: [1, 1, 1], make: () => meshGeometries[part.mesh] };
      default:
        throw new Error("unknown shape " + part.kind);
    }
  }

  function buildWorld(world) {
    const group = new THREE.Group();
    group.visible = false;
    const byKey = new Map(); // key -> {shape, items: [{body, part}]}
    world.bodies.forEach(function (body, b) {
      for (const part of body.parts) {
        const shape = partShape(part);
        if (!byKey.has(shape.key)) byKey.set(shape.key, { shape: shape, items: [] });
        byKey.get(shape.key).items.push({ b: b, part: part, scale: shape.scale });
      }
    });
    const entries = world.bodies.map(() => []); // per body: where its parts are drawn
    const meshes = [];
    for (const { shape, items } of byKey.values()) {
      const flat = shape.key.startsWith("mesh");
      const material = new THREE.MeshStandardMaterial({ color: 0xffffff, roughness: 0.75,
        metalness: 0.0, flatShading: flat });
      const mesh = new THREE.InstancedMesh(shape.make(items.length), material, items.length);
      mesh.instanceMatrix.setUsage(THREE.DynamicDrawUsage);
      mesh.frustumCulled = false; // instances move: the mesh's own bounds would be stale
      mesh.castShadow = shape.key !== "plane";
      mesh.receiveShadow = true;
      items.forEach(function (item, i) {
        mesh.setColorAt(i, srgb(item.part.colour));
        const o = item.part.offset, r = item.part.rotation;
        const local = o[0] !== 0 || o[1] !== 0 || o[2] !== 0 || r[3] !== 1;
        entries[item.b].push({ mesh: mesh, index: i, local: local,
          offset: new THREE.Vector3().fromArray(o), rotation: new THREE.Quaternion().fromArray(r),
          scale: new THREE.Vector3().fromArray(item.scale) });
      });
      mesh.instanceColor.needsUpdate = true;
      group.add(mesh);
      meshes.push(mesh);
    }
    scene.add(group);
    return { group: group, entries: entries, meshes: meshes, grids: [], world: world };
  }

  // a faint grid on each plane, spaced 10^k m with about 10 lines across what moves
  function addGrids(w, first) {
    w.world.bodies.forEach(function (body, b) {
      body.parts.forEach(function (part) {
        if (part.kind !== "plane") return;
        const size = part.size[0];
        const step = Math.pow(10, Math.floor(Math.log10(Math.max(2 * R, 1e-3) / 2)));
        const n = Math.max(2, Math.min(400, Math.round(size / step)));
        const grid = new THREE.GridHelper(n * step, n, 0xa8a8a8, 0xb4b4b4);
        grid.rotateX(Math.PI / 2); // GridHelper lies in its xz plane
        const holder = new THREE.Group();
        holder.add(grid);
        const q = new THREE.Quaternion(first[7 * b + 3], first[7 * b + 4], first[7 * b + 5], first[7 * b + 6]);
        holder.quaternion.copy(q).multiply(new THREE.Quaternion().fromArray(part.rotation));
        holder.position.set(first[7 * b], first[7 * b + 1], first[7 * b + 2])
          .add(new THREE.Vector3(0, 0, 5e-4 * R).applyQuaternion(holder.quaternion));
        w.group.add(holder);
        w.grids.push(holder);
      });
    });
  }

  const worlds = DATA.worlds.map(buildWorld);

  // ---------------------------------------------------------------- runs
  const decoded = [];
  function run(i) {
    if (!decoded[i]) {
      const r = DATA.runs[i];
      const d = { times: new Float64Array(bytes(r.times)), first: new Float32Array(bytes(r.first)),
        moving: r.moving, turning: r.turning, pos: new Float32Array(bytes(r.positions)),
        quat: new Float32Array(bytes(r.quaternions)), world: worlds[r.world] };
      d.turnIndex = new Int32Array(r.moving.length).fill(-1); // moving j -> turning j
      const where = new Map(r.turning.map((b, j) => [b, j]));
      r.moving.forEach((b, j) => { if (where.has(b)) d.turnIndex[j] = where.get(b); });
      if (d.world.grids.length === 0) addGrids(d.world, d.first);
      decoded[i] = d;
    }
    return decoded[i];
  }

  const _p = new THREE.Vector3(), _o = new THREE.Vector3(), _q = new THREE.Quaternion();
  const _r = new THREE.Quaternion(), _m = new THREE.Matrix4();
  function place(w, b, px, py, pz, qx, qy, qz, qw) {
    for (const e of w.entries[b]) {
      _q.set(qx, qy, qz, qw);
      if (e.local) {
        _o.copy(e.offset).applyQuaternion(_q);
        _p.set(px + _o.x, py + _o.y, pz + _o.z);
        _r.copy(_q).multiply(e.rotation);
        _m.compose(_p, _r, e.scale);
      } else {
        _p.set(px, py, pz);
        _m.compose(_p, _q, e.scale);
      }
      e.mesh.setMatrixAt(e.index, _m);
    }
  }

  function placeAll(d) {
    const f = d.first;
    for (let b = 0; b < d.world.entries.length; b++) {
      place(d.world, b, f[7 * b], f[7 * b + 1], f[7 * b + 2], f[7 * b + 3], f[7 * b + 4], f[7 * b + 5], f[7 * b + 6]);
    }
  }

  // the record k at or before t and the fraction a of the way to record k + 1
  function locate(T, t) {
    const n = T.length;
    if (n === 1 || t <= T[0]) return [0, 0];
    if (t >= T[n - 1]) return [n - 1, 0];
    let lo = 0, hi = n - 1;
    while (hi - lo > 1) {
      const mid = (lo + hi) >> 1;
      if (T[mid] <= t) lo = mid; else hi = mid;
    }
    return [lo, (t - T[lo]) / (T[lo + 1] - T[lo])];
  }

  function pose(d, t) {
    const [k, a] = locate(d.times, t);
    const k2 = Math.min(k + 1, d.times.length - 1);
    const nm = d.moving.length, nt = d.turning.length, P = d.pos, Q = d.quat, f = d.first;
    for (let j = 0; j < nm; j++) {
      const b = d.moving[j];
      const i1 = 3 * (k * nm + j), i2 = 3 * (k2 * nm + j);
      const px = P[i1] + a * (P[i2] - P[i1]);
      const py = P[i1 + 1] + a * (P[i2 + 1] - P[i1 + 1]);
      const pz = P[i1 + 2] + a * (P[i2 + 2] - P[i1 + 2]);
      const ti = d.turnIndex[j];
      let qx, qy, qz, qw;
      if (ti < 0) {
        qx = f[7 * b + 3]; qy = f[7 * b + 4]; qz = f[7 * b + 5]; qw = f[7 * b + 6];
      } else { // normalised linear interpolation on the shorter arc
        const q1 = 4 * (k * nt + ti), q2 = 4 * (k2 * nt + ti);
        const s = Q[q1] * Q[q2] + Q[q1 + 1] * Q[q2 + 1] + Q[q1 + 2] * Q[q2 + 2] + Q[q1 + 3] * Q[q2 + 3] < 0 ? -1 : 1;
        qx = (1 - a) * Q[q1] + a * s * Q[q2];
        qy = (1 - a) * Q[q1 + 1] + a * s * Q[q2 + 1];
        qz = (1 - a) * Q[q1 + 2] + a * s * Q[q2 + 2];
        qw = (1 - a) * Q[q1 + 3] + a * s * Q[q2 + 3];
        const norm = Math.hypot(qx, qy, qz, qw);
        qx /= norm; qy /= norm; qz /= norm; qw /= norm;
      }
      place(d.world, b, px, py, pz, qx, qy, qz, qw);
    }
    for (const mesh of d.world.meshes) mesh.instanceMatrix.needsUpdate = true;
  }

  // ---------------------------------------------------------------- playback state and UI
  const el = (id) => document.getElementById(id);
  const playButton = el("play"), dirButton = el("dir"), slider = el("slider");
  const speedSelect = el("speed"), loopBox = el("loop"), runSelect = el("run"), clock = el("clock");

  let current = 0, t = 0, t0 = 0, t1 = 0, holdUntil = 0, dirty = true;
  let playing = !("paused" in hash);
  let direction = ("reverse" in hash ? hash.reverse !== "0" : DATA.reverse) ? -1 : 1;
  let speed = hash.speed !== undefined && Number(hash.speed) > 0 ? Number(hash.speed) : DATA.speed;

  const speeds = SPEEDS.includes(speed) ? SPEEDS : SPEEDS.concat([speed]).sort((x, y) => x - y);
  for (const s of speeds) speedSelect.add(new Option(s + "\u00d7", String(s), false, s === speed));

  DATA.runs.forEach(function (r, i) {
    const note = r.status && r.status !== "ok" ? " (" + r.status + ")" : "";
    runSelect.add(new Option(r.label + note, String(i)));
  });
  el("runbox").hidden = DATA.runs.length < 2;

  function showButtons() {
    playButton.innerHTML = playing ? "&#10074;&#10074;" : "&#9654;";
    dirButton.innerHTML = direction > 0 ? "&#8594;" : "&#8592;";
    dirButton.title = (direction > 0 ? "playing forward" : "playing backward") + " in time (R)";
  }

  function setTime(value) {
    t = Math.min(t1, Math.max(t0, Number(value)));
    dirty = true;
  }

  function setRun(i) {
    i = Math.max(0, Math.min(DATA.runs.length - 1, Number(i) | 0));
    const d = run(i);
    worlds.forEach((w) => { w.group.visible = w === d.world; });
    current = i;
    runSelect.value = String(i);
    t0 = d.times[0];
    t1 = d.times[d.times.length - 1];
    slider.min = String(t0);
    slider.max = String(t1);
    placeAll(d);
    setTime(t);
  }

  function draw() {
    const d = run(current);
    pose(d, t);
    slider.value = String(t);
    clock.textContent = "t = " + t.toFixed(3) + " s";
    renderer.render(scene, camera);
    dirty = false;
  }

  function tick(wallStep) {
    if (!playing) return;
    if (holdUntil > 0) {
      holdUntil -= wallStep;
      if (holdUntil > 0) return;
      holdUntil = 0;
      setTime(direction > 0 ? t0 : t1);
      return;
    }
    const next = t + direction * speed * wallStep;
    if (next > t1 || next < t0) {
      setTime(next);
      if (loopBox.checked && t1 > t0) holdUntil = LOOP_PAUSE;
      else { playing = false; showButtons(); }
    } else setTime(next);
  }

  let last = null;
  function frame(now) {
    const wallStep = last === null ? 0 : Math.min((now - last) / 1000, MAX_WALL_STEP);
    last = now;
    tick(wallStep);
    if (dirty) draw();
    requestAnimationFrame(frame);
  }

  function togglePlay() {
    if (!playing && ((direction > 0 && t >= t1) || (direction < 0 && t <= t0))) {
      setTime(direction > 0 ? t0 : t1); // at the end: play again from the start
    }
    playing = !playing;
    holdUntil = 0;
    showButtons();
  }

  function step(sign) {
    playing = false;
    showButtons();
    const T = run(current).times;
    const [k, a] = locate(T, t);
    const target = sign > 0 ? T[Math.min(k + 1, T.length - 1)] : a > 0 ? T[k] : T[Math.max(k - 1, 0)];
    setTime(target);
  }

  playButton.addEventListener("click", togglePlay);
  dirButton.addEventListener("click", () => { direction = -direction; showButtons(); });
  slider.addEventListener("input", () => { setTime(slider.value); });
  speedSelect.addEventListener("change", () => { speed = Number(speedSelect.value); });
  runSelect.addEventListener("change", () => { setRun(runSelect.value); });
  controls.addEventListener("change", () => { dirty = true; });
  controls.addEventListener("start", () => { userMoved = true; });
  function resized() {
    const [w, h] = viewSize();
    camera.aspect = w / h;
    camera.updateProjectionMatrix();
    renderer.setSize(w, h);
    fitCamera();
    dirty = true;
  }
  window.addEventListener("resize", resized);
  if (window.ResizeObserver) new ResizeObserver(resized).observe(view);
  el("help").addEventListener("click", () => { el("hint").hidden = !el("hint").hidden; resized(); });
  window.addEventListener("keydown", function (ev) {
    if (ev.target instanceof HTMLSelectElement || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.key === " ") togglePlay();
    else if (ev.key === "ArrowRight") step(1);
    else if (ev.key === "ArrowLeft") step(-1);
    else if (ev.key === "r" || ev.key === "R") { direction = -direction; showButtons(); }
    else if (ev.key === "Home") setTime(t0);
    else if (ev.key === "End") setTime(t1);
    else return;
    ev.preventDefault();
    if (ev.target instanceof HTMLElement && ev.target !== document.body) ev.target.blur();
  });

  // ---------------------------------------------------------------- start
  let start = 0;
  if (hash.run !== undefined) {
    const byLabel = DATA.runs.findIndex((r) => r.label === hash.run);
    start = byLabel >= 0 ? byLabel : Number(hash.run) | 0;
  }
  setRun(start);
  setTime(hash.t !== undefined ? Number(hash.t) : direction > 0 ? t0 : t1);
  showButtons();
  draw();

  api.seek = function (value) { setTime(value); draw(); return t; };
  api.setRun = function (i) { setRun(i); draw(); return current; };
  api.play = function () { if (!playing) togglePlay(); };
  api.pause = function () { if (playing) togglePlay(); };
  api.state = function () {
    return { t: t, run: current, playing: playing, direction: direction, speed: speed,
      start: t0, end: t1, runs: DATA.runs.map((r) => r.label) };
  };
  api.ready = true;
  requestAnimationFrame(frame);
})();
