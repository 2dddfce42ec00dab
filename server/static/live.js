// The live event stream of one conversation over /sockets/events/{id}, resumed after a drop.
//
// The owner gets every stored event once, in seq order: the socket remembers the last seq it
// handed over, reconnects with resend_mode=since&after_seq=<it>, and drops anything at or below
// it. Ephemeral events (token deltas) carry no seq and pass straight through.

/** The server's close codes (server/stream/close_codes.py). */
export const CloseCode = Object.freeze({
  BAD_REQUEST: 4000,
  UNAUTHORIZED: 4001,
  UNKNOWN_CONVERSATION: 4004,
  TOO_SLOW: 4008,
  TOO_MANY_SUBSCRIBERS: 4029,
});

/** Closes after which reconnecting cannot help. */
const FATAL = new Set([CloseCode.BAD_REQUEST, CloseCode.UNAUTHORIZED, CloseCode.UNKNOWN_CONVERSATION]);

/** A close the page makes itself to simulate a dropped connection (3000-4999 are free to use). */
const DROPPED_ON_PURPOSE = 3000;

export class LiveSocket {
  /**
   * @param {import("./api.js").Api} api
   * @param {string} conversationId
   * @param {{onFullState: Function, onEvent: Function, onState: Function, onFatal: Function}} handlers
   *   onState(state, detail) with state "connecting" | "live" | "reconnecting";
   *   onFatal(code, reason) when the server refused for good (bad key, unknown conversation).
   */
  constructor(api, conversationId, handlers) {
    this.api = api;
    this.conversationId = conversationId;
    this.handlers = handlers;
    /** The seq of the last stored event handed over: the resume point. */
    this.lastSeq = 0;
    this.connects = 0;
    this.openedAt = null;
    /** When the last frame arrived (performance.now()), for measurement. */
    this.receivedAt = null;
    this._socket = null;
    this._stopped = false;
    this._retries = 0;
    this._timer = null;
  }

  start() {
    this._connect();
  }

  /** Close for good (the page moved on). */
  stop() {
    this._stopped = true;
    clearTimeout(this._timer);
    this._socket?.close(1000, "viewer closed");
    this._socket = null;
  }

  /** Drop the connection as a network failure would; it reconnects from `lastSeq`. */
  drop() {
    this._socket?.close(DROPPED_ON_PURPOSE, "dropped");
  }

  _connect() {
    const params = this.lastSeq > 0 ? { resend_mode: "since", after_seq: this.lastSeq } : { resend_mode: "all" };
    const url = this.api.socketUrl(`/sockets/events/${encodeURIComponent(this.conversationId)}`, params);
    this.handlers.onState(this.connects === 0 ? "connecting" : "reconnecting");
    const socket = new WebSocket(url);
    this._socket = socket;
    socket.onopen = () => {
      this.connects += 1;
      this.openedAt = performance.now();
      // The key goes in the first frame, never in the URL (URLs end up in logs).
      if (this.api.key) socket.send(JSON.stringify({ type: "auth", session_api_key: this.api.key }));
    };
    socket.onmessage = (message) => {
      if (socket !== this._socket) return;
      this.receivedAt = performance.now();
      this._receive(JSON.parse(message.data));
    };
    socket.onclose = (close) => {
      if (socket !== this._socket || this._stopped) return;
      this._socket = null;
      if (FATAL.has(close.code)) {
        this.handlers.onFatal(close.code, close.reason);
        return;
      }
      // A drop, a too-slow close, a server restart: come back from where we were.
      const delay = close.code === CloseCode.TOO_SLOW ? 0 : Math.min(5000, 250 * 2 ** this._retries);
      this._retries += 1;
      this.handlers.onState("reconnecting", close.reason || `closed (${close.code})`);
      this._timer = setTimeout(() => this._connect(), delay);
    };
  }

  _receive(event) {
    if (event.kind === "ConversationStateUpdateEvent" && event.key === "full_state") {
      this._retries = 0;
      this.handlers.onState("live");
      this.handlers.onFullState(event.value);
      return;
    }
    if (event.type === "error") return; // the answer to a bad inbound frame; we send none
    if (event.seq != null) {
      if (event.seq <= this.lastSeq) return; // already handed over before a reconnect
      this.lastSeq = event.seq;
    }
    this.handlers.onEvent(event);
  }
}
