/**
 * Workspace markers: notes one session leaves on a path for the others (a handoff, a warning,
 * work in progress). Advisory only.
 * @module
 */
import { SvcError } from '../errors';
import type { Clock, Ids } from '../util/ids';
import type { Marker, MarkerKind, MarkerRepository } from './marker-repository';
import { normalizeScope, overlaps } from './paths';

export { MARKER_KINDS, type Marker, type MarkerKind } from './marker-repository';

export interface MarkerService {
  create(input: {
    session_id: string;
    path: string;
    kind: MarkerKind;
    message: string;
    ttl_seconds?: number;
  }): Promise<Marker>;
  list(input?: { path?: string; session_id?: string }): Promise<Marker[]>;
  delete(input: { marker_id: string; session_id?: string }): Promise<Marker>;
}

export interface MarkerDeps {
  markers: MarkerRepository;
  /** The workspace root marker paths are relative to. */
  workspace: string;
  clock: Clock;
  ids: Ids;
}

export function createMarkerService(deps: MarkerDeps): MarkerService {
  const now = () => deps.clock.now();
  const get = async (id: string) => {
    const row = await deps.markers.get(id);
    if (!row) throw new SvcError('not_found', `marker_id: no marker "${id}"; see leave_marker action list`);
    return row;
  };
  return {
    async create(input) {
      if (!input.message.trim()) throw new SvcError('invalid_input', 'message: a marker needs a message');
      const id = deps.ids.next('mrk');
      const t = now();
      await deps.markers.insert({
        id,
        session_id: input.session_id,
        path: normalizeScope(deps.workspace, input.path),
        kind: input.kind,
        message: input.message,
        created_at: t,
        expires_at: input.ttl_seconds ? t + input.ttl_seconds * 1000 : null,
      });
      return await get(id);
    },
    async list(input = {}) {
      const rows = await deps.markers.open(now());
      const scope = input.path ? normalizeScope(deps.workspace, input.path) : undefined;
      return rows.filter(
        (m) =>
          (!scope || overlaps(m.path, scope)) && (!input.session_id || m.session_id === input.session_id),
      );
    },
    async delete(input) {
      const marker = await get(input.marker_id);
      await deps.markers.delete(marker.id);
      return marker;
    },
  };
}
