// The few Node.js APIs this package and its tests use, declared by hand:
// Debian's TypeScript comes without @types/node. Only the signatures used
// are declared, as Node 20 documents them.

declare const process: {
  env: Record<string, string | undefined>;
  platform: string;
};

declare module "node:crypto" {
  export function randomUUID(): string;
}

declare module "node:path" {
  export function dirname(p: string): string;
  export function join(...parts: string[]): string;
  export function resolve(...parts: string[]): string;
  export function isAbsolute(p: string): boolean;
}

declare module "node:os" {
  export function homedir(): string;
  export function tmpdir(): string;
}

declare module "node:fs/promises" {
  export interface Stats {
    size: number;
    mode: number;
    isDirectory(): boolean;
  }
  export interface FileHandle {
    readonly fd: number;
    write(data: Uint8Array, offset?: number, length?: number, position?: number | null): Promise<{ bytesWritten: number }>;
    read(buffer: Uint8Array, offset: number, length: number, position: number): Promise<{ bytesRead: number }>;
    stat(): Promise<Stats>;
    sync(): Promise<void>;
    close(): Promise<void>;
  }
  export function open(path: string, flags: string, mode?: number): Promise<FileHandle>;
  export function readFile(path: string): Promise<Uint8Array>;
  export function mkdir(path: string, opts: { recursive: boolean; mode?: number }): Promise<string | undefined>;
  export function stat(path: string): Promise<Stats>;
  export function rename(from: string, to: string): Promise<void>;
}

declare module "node:fs" {
  export function mkdtempSync(prefix: string): string;
  export function rmSync(path: string, opts: { recursive: boolean; force: boolean }): void;
  export function readFileSync(path: string, encoding: "utf8"): string;
  export function writeFileSync(path: string, data: string): void;
  export function appendFileSync(path: string, data: string): void;
  export function openSync(path: string, flags: string): number;
  export function closeSync(fd: number): void;
  export function accessSync(path: string, mode: number): void;
  export function statSync(path: string): { mode: number };
  export const constants: { X_OK: number };
}

declare module "node:child_process" {
  export interface ChildProcess {
    readonly pid?: number;
    exitCode: number | null;
    signalCode: string | null;
    kill(signal?: string): boolean;
    once(event: "exit", fn: (code: number | null, signal: string | null) => void): void;
  }
  export function spawn(cmd: string, args: string[], opts: { stdio: ["ignore", number, number] }): ChildProcess;
  export function execFileSync(cmd: string, args: string[], opts: { cwd?: string; timeout?: number; stdio?: "inherit" }): void;
  export function execFile(
    cmd: string,
    args: string[],
    opts: { timeout: number },
    cb: (err: (Error & { code?: number }) | null, stdout: string, stderr: string) => void,
  ): void;
}

declare module "node:net" {
  export interface AddressInfo {
    port: number;
  }
  export interface Server {
    listen(port: number, host: string, cb: () => void): void;
    address(): AddressInfo;
    close(cb?: () => void): void;
  }
  export function createServer(): Server;
}

declare module "node:http" {
  export interface IncomingMessage {
    method?: string;
    url?: string;
    statusCode?: number;
    headers: Record<string, string | string[] | undefined>;
    socket: { destroy(): void };
    on(event: "data", fn: (chunk: Uint8Array) => void): this;
    on(event: "end", fn: () => void): this;
    on(event: "error", fn: (err: Error) => void): this;
  }
  export interface ServerResponse {
    writeHead(status: number, headers: Record<string, string>): void;
    end(body?: Uint8Array | string): void;
  }
  export interface ClientRequest {
    on(event: "error", fn: (err: Error) => void): this;
    end(body?: Uint8Array): void;
  }
  export interface Server {
    listen(port: number, host: string, cb: () => void): void;
    address(): { port: number };
    close(cb?: () => void): void;
    closeAllConnections(): void;
  }
  export function createServer(handler: (req: IncomingMessage, res: ServerResponse) => void): Server;
  export function request(
    url: string,
    opts: { method: string; headers: Record<string, string> },
    cb: (res: IncomingMessage) => void,
  ): ClientRequest;
}

declare module "node:test" {
  type Fn = () => void | Promise<void>;
  export function describe(name: string, fn: Fn): void;
  export function it(name: string, fn: Fn): void;
  export function test(name: string, fn: Fn): void;
  export function before(fn: Fn, opts?: { timeout: number }): void;
  export function after(fn: Fn, opts?: { timeout: number }): void;
}

declare module "node:assert/strict" {
  function assert(value: unknown, message?: string): asserts value;
  namespace assert {
    function ok(value: unknown, message?: string): asserts value;
    function equal<T>(actual: unknown, expected: T, message?: string): asserts actual is T;
    function deepEqual(actual: unknown, expected: unknown, message?: string): void;
    function match(value: string, re: RegExp, message?: string): void;
    function rejects(fn: Promise<unknown> | (() => Promise<unknown>), check?: (err: unknown) => boolean, message?: string): Promise<void>;
  }
  export = assert;
}

declare const __dirname: string;
