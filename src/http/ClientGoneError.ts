/**
 * The client went away (hung up, reset, aborted its request) before the handler could answer:
 * there is nobody left to answer. Never surfaces: the handler just stops.
 */
export class ClientGoneError extends Error {
  constructor() {
    super('The client closed the connection before the charge handler could answer.');
    this.name = 'ClientGoneError';
  }
}
