/**
 * The svc web UI's entry: take a token handed over in the URL fragment, then render the app.
 * @module
 */
import { render } from 'preact';
import { createTokenStore, takeFragmentToken } from './auth';
import { App } from './ui/app';
import './styles.css';
import './chat.css';
import './readouts.css';

const tokens = createTokenStore();
takeFragmentToken(tokens, location, history);
const root = document.getElementById('root');
if (root) {
  root.textContent = '';
  render(<App tokens={tokens} />, root);
}
