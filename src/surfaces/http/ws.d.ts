/**
 * The part of `ws` (8.x) that svc uses: the server side of the session event stream's WebSocket
 * (./event-socket.ts) and the client the tests read it with. Declared here, not
 * taken from @types/ws, which is not installed.
 */
declare module 'ws' {
  import type { EventEmitter } from 'node:events';
  import type { IncomingMessage } from 'node:http';
  import type { Duplex } from 'node:stream';

  type Data = Buffer | ArrayBuffer | Buffer[];

  export class WebSocket extends EventEmitter {
    static readonly CONNECTING: 0;
    static readonly OPEN: 1;
    static readonly CLOSING: 2;
    static readonly CLOSED: 3;
    constructor(
      address: string | URL,
      protocols?: string | string[],
      options?: { headers?: Record<string, string>; origin?: string; handshakeTimeout?: number },
    );
    readonly readyState: 0 | 1 | 2 | 3;
    readonly bufferedAmount: number;
    readonly protocol: string;
    send(data: string | Buffer, callback?: (error?: Error) => void): void;
    close(code?: number, reason?: string): void;
    terminate(): void;
    on(event: 'message', listener: (data: Data, isBinary: boolean) => void): this;
    on(event: 'close', listener: (code: number, reason: Buffer) => void): this;
    on(event: 'error', listener: (error: Error) => void): this;
    on(event: 'open', listener: () => void): this;
    on(event: 'unexpected-response', listener: (request: unknown, response: IncomingMessage) => void): this;
    on(event: string, listener: (...args: any[]) => void): this;
    once(event: 'close', listener: (code: number, reason: Buffer) => void): this;
    once(event: string, listener: (...args: any[]) => void): this;
  }

  export interface WebSocketServerOptions {
    noServer?: boolean;
    maxPayload?: number;
    clientTracking?: boolean;
    perMessageDeflate?: boolean;
    handleProtocols?: (protocols: Set<string>, request: IncomingMessage) => string | false;
  }

  export class WebSocketServer extends EventEmitter {
    constructor(options: WebSocketServerOptions);
    handleUpgrade(
      request: IncomingMessage,
      socket: Duplex,
      head: Buffer,
      callback: (socket: WebSocket, request: IncomingMessage) => void,
    ): void;
  }

  export default WebSocket;
}
