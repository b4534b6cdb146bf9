// Test support: a real rest.area node started from the binary, and a
// fault-injecting HTTP proxy in front of it.

import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";

export const REPO = path.resolve(__dirname, "..", "..", "..", "..");

/** The operator's token of every node the tests start. */
export const ADMIN_TOKEN = "clients-test-admin-token-0123456789";

// Bounds on waiting for a condition; generous for a machine whose cores are busy.
const START_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 60_000;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Poll cond until it returns a truthy value, failing after timeoutMs. */
export async function waitFor<T>(what: string, timeoutMs: number, cond: () => Promise<T | undefined> | T | undefined): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await cond();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${String(last)})`);
    await sleep(50);
  }
}

let built: { dir: string; bin: string } | undefined;

/** The restarea binary: $RESTAREA_BIN, or built once from the repository into a temporary directory (removeBinary removes it). */
export function binary(): string {
  const env = process.env.RESTAREA_BIN;
  if (env) {
    fs.accessSync(env, fs.constants.X_OK);
    return env;
  }
  if (!built) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "restarea-tstest-bin-"));
    const bin = path.join(dir, "restarea");
    execFileSync("go", ["build", "-o", bin, "./cmd/restarea"], { cwd: REPO, timeout: 900_000, stdio: "inherit" });
    built = { dir, bin };
  }
  return built.bin;
}

export function removeBinary(): void {
  if (built) fs.rmSync(built.dir, { recursive: true, force: true });
  built = undefined;
}

export function tempDir(what: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `restarea-tstest-${what}-`));
}

/** An http:// URL on a loopback port that was free a moment ago: connections are refused. */
export async function closedURL(): Promise<string> {
  const s = net.createServer();
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  const port = s.address().port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

async function status(url: string): Promise<number> {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), 10_000);
  try {
    const r = await fetch(url, { signal: ctl.signal });
    await r.arrayBuffer();
    return r.status;
  } finally {
    clearTimeout(timer);
  }
}

/** One restarea serve process with its own data directory, on free loopback
 * ports. stop and start again keep the data (the port changes). */
export class Node {
  readonly dir = tempDir("node");
  url = "";
  private proc?: ChildProcess;
  private runs = 0;

  async start(): Promise<this> {
    this.runs++;
    const log = path.join(this.dir, `node-${this.runs}.log`);
    const fd = fs.openSync(log, "w");
    const args = [
      "serve",
      "--data-dir", path.join(this.dir, "data"),
      "--http-addr", "127.0.0.1:0",
      "--raft-addr", "127.0.0.1:0",
      "--log-level", "info", // the "serving" line, which names the address, is at info
      // The tests post and search more than a person would.
      "--rate-per-source", "100000/m",
      "--search-rate-per-source", "100000/m",
      "--admin-token", ADMIN_TOKEN,
    ]; // prettier-ignore
    const proc = spawn(binary(), args, { stdio: ["ignore", fd, fd] });
    fs.closeSync(fd);
    this.proc = proc;
    this.url = await waitFor("the node's address", START_TIMEOUT_MS, () => {
      const text = fs.readFileSync(log, "utf8");
      for (const line of text.split("\n")) {
        let rec: unknown;
        try {
          rec = JSON.parse(line);
        } catch {
          continue;
        }
        const r = rec as { msg?: unknown; url?: unknown } | null;
        if (r && r.msg === "serving" && typeof r.url === "string") return r.url;
      }
      if (proc.exitCode !== null || proc.signalCode !== null) {
        throw new Error(`restarea serve exited: ${text.slice(-2000)}`);
      }
      return "";
    });
    await waitFor("/readyz", START_TIMEOUT_MS, async () => (await status(this.url + "/readyz")) === 200);
    return this;
  }

  /** Send an operator's request to the admin API; resolve to its status. */
  async admin(method: "POST" | "PUT", path: string, body?: unknown): Promise<number> {
    const r = await fetch(this.url + "/api/v1/admin" + path, {
      method,
      headers: { Authorization: "Bearer " + ADMIN_TOKEN },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    await r.arrayBuffer();
    return r.status;
  }

  /** Raise the cluster to the newest cluster version every member knows
   * (POST /api/v1/admin/cluster/finalize-upgrade; harmless when it already
   * runs it), which finding a post by its body needs. */
  async finalizeUpgrade(): Promise<void> {
    await waitFor("finalize-upgrade answered 200", START_TIMEOUT_MS, async () => (await this.admin("POST", "/cluster/finalize-upgrade")) === 200);
  }

  async stop(): Promise<void> {
    const p = this.proc;
    this.proc = undefined;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => p.once("exit", () => resolve()));
    p.kill("SIGTERM");
    const timer = setTimeout(() => p.kill("SIGKILL"), STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  }

  async remove(): Promise<void> {
    await this.stop();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Faults the proxy injects into POSTs, one per request, in order. */
export type Fault =
  | "drop" // forward, then close the connection without answering: the answer is lost
  | "429" // answer 429 rate_limited with Retry-After: 1, without forwarding
  | "503"; // answer 503 unavailable without Retry-After, without forwarding

function collect(m: http.IncomingMessage): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const chunks: Uint8Array[] = [];
    m.on("data", (c) => chunks.push(c));
    m.on("end", () => {
      const size = chunks.reduce((n, c) => n + c.length, 0);
      const out = new Uint8Array(size);
      let off = 0;
      for (const c of chunks) {
        out.set(c, off);
        off += c.length;
      }
      resolve(out);
    });
    m.on("error", reject);
  });
}

/** An HTTP proxy on a loopback port that forwards to upstream, injecting the
 * scripted faults into POSTs in order; with dropAll every POST's answer is
 * dropped after forwarding. seen lists what each POST met. */
export class FaultProxy {
  dropAll = false;
  readonly seen: string[] = [];
  url = "";
  private faults: Fault[] = [];
  private readonly server: http.Server;

  constructor(readonly upstream: string) {
    this.server = http.createServer((req, res) => {
      void this.handle(req, res);
    });
  }

  async listen(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${this.server.address().port}`;
    return this;
  }

  scriptPosts(...faults: Fault[]): void {
    this.faults = faults;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const body = await collect(req);
    let fault: Fault | undefined;
    if (req.method === "POST") {
      fault = this.faults.shift() ?? (this.dropAll ? "drop" : undefined);
      this.seen.push(fault ?? "forwarded");
    }
    const json = { "Content-Type": "application/json; charset=utf-8" };
    if (fault === "429") {
      res.writeHead(429, { ...json, "Retry-After": "1" });
      res.end('{"error":{"code":"rate_limited","message":"injected"}}');
      return;
    }
    if (fault === "503") {
      res.writeHead(503, json);
      res.end('{"error":{"code":"unavailable","message":"injected"}}');
      return;
    }
    const up = http.request(this.upstream + (req.url ?? "/"), { method: req.method ?? "GET", headers: { "Content-Type": "application/json" } }, (ur) => {
      void collect(ur).then((data) => {
        if (fault === "drop") {
          // The post reached the node; its answer never reaches the client.
          req.socket.destroy();
          return;
        }
        const h: Record<string, string> = { ...json };
        const ra = ur.headers["retry-after"];
        if (typeof ra === "string") h["Retry-After"] = ra;
        res.writeHead(ur.statusCode ?? 502, h);
        res.end(data);
      });
    });
    up.on("error", () => req.socket.destroy());
    up.end(req.method === "POST" ? body : undefined);
  }
}
