/**
 * Operator cognition: recommendation follow-through per signal zone over the calibration window.
 * It counts what was recommended and what happened next; it grades nobody.
 * @module
 */
import { useState } from 'preact/hooks';
import type { Api } from '../../api';
import { ErrorBox, formatTime, Loading, ReadoutFrame } from '../common';
import { useResource } from '../hooks';

interface Cognition {
  schema_version: string;
  generated_at_unix: number;
  scope: string;
  zone: string;
  calibration_window: {
    days: number;
    max_recommendations: number;
    since_unix: number;
    recommendations_in_window: number;
  };
  patterns: {
    zone: string;
    recommendations: number;
    followed: number;
    dismissed: number;
    expired: number;
    pending: number;
    follow_through_rate: number | null;
    median_seconds_to_follow: number | null;
  }[];
  warnings: string[];
  evidence_boundary: string;
}

export function CognitionView({ api }: { api: Api }) {
  const [zone, setZone] = useState('');
  const [applied, setApplied] = useState('');
  const data = useResource(
    () => api.get<Cognition>('v1/operator-cognition', { zone: applied }),
    [api, applied],
  );
  const form = (
    <form
      class="inline-form"
      onSubmit={(event) => {
        event.preventDefault();
        setApplied(zone.trim());
      }}
    >
      <label>
        <span>Zone</span>
        <input
          value={zone}
          placeholder="all zones"
          onInput={(e) => setZone((e.target as HTMLInputElement).value)}
        />
      </label>
      <button type="submit">Show</button>
    </form>
  );
  if (data.error && !data.data)
    return (
      <>
        {form}
        <ErrorBox error={data.error} onRetry={data.reload} />
      </>
    );
  if (!data.data) return <Loading what="operator cognition" />;
  const c = data.data;
  return (
    <ReadoutFrame
      title="Operator cognition"
      source={`GET v1/operator-cognition${applied ? `?zone=${applied}` : ''}`}
      data={c}
      actions={form}
    >
      <p class="muted">
        {c.schema_version} · {c.scope} · window: {c.calibration_window.days} days or{' '}
        {c.calibration_window.max_recommendations} recommendations, since{' '}
        {formatTime(c.calibration_window.since_unix)} ({c.calibration_window.recommendations_in_window} in
        window)
      </p>
      {c.warnings.length ? (
        <ul class="warnings">
          {c.warnings.map((w) => (
            <li key={w}>{w}</li>
          ))}
        </ul>
      ) : null}
      {c.patterns.length ? (
        <div class="table-wrap">
          <table class="data">
            <thead>
              <tr>
                <th>Zone</th>
                <th>Recommended</th>
                <th>Followed</th>
                <th>Dismissed</th>
                <th>Expired</th>
                <th>Pending</th>
                <th>Follow-through</th>
                <th>Median time to follow</th>
              </tr>
            </thead>
            <tbody>
              {c.patterns.map((p) => (
                <tr key={p.zone}>
                  <td>{p.zone}</td>
                  <td>{p.recommendations}</td>
                  <td>{p.followed}</td>
                  <td>{p.dismissed}</td>
                  <td>{p.expired}</td>
                  <td>{p.pending}</td>
                  <td>
                    {p.follow_through_rate === null ? '—' : `${Math.round(p.follow_through_rate * 100)}%`}
                  </td>
                  <td>{p.median_seconds_to_follow === null ? '—' : `${p.median_seconds_to_follow} s`}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : (
        <p class="empty">No recommendations recorded in the window.</p>
      )}
      <p class="muted">{c.evidence_boundary}</p>
    </ReadoutFrame>
  );
}
